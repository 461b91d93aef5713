let n = 0; await new Promise((done) => { const tick = () => { if (++n < 20) setTimeout(tick, n % 3); else done(); }; tick(); const i = setInterval(() => clearInterval(i), 0); });
