const t = new TextEncoder(); for (const n of [0, 1, 2, 3, 4]) { const out = new Uint8Array(n); report(t.encodeInto("a\u00e9\ud83d\ude00\ud800", out)); }
