try { const a = []; for (;;) a.push("x".repeat(1 << 16) + a.length); } catch (e) { report({oom: String(e)}); console.log(e); }
