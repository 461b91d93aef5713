(() => {
  const entries = Map.prototype.entries, values = Set.prototype.values;
  const getTime = Date.prototype.getTime, from = Array.from, slice = String.prototype.slice;
  const B = BigInt, D = Date, M = Map, S = Set, dp = Object.defineProperty, gp = Object.getPrototypeOf;
  const rej = new Map();
  const G = globalThis, F = Function, E = G.eval;
  const protos = [gp(function(){}), gp(async function(){}), gp(function*(){}),
                  gp(async function*(){})];
  const ctors = protos.map((p) => p.constructor);
  return {
    mapEntries: (m) => from(entries.call(m)),
    setValues: (s) => from(values.call(s)),
    keyCheck: (c) => { const it = c instanceof M ? from(entries.call(c), (p) => p[0]) : from(values.call(c));
      for (const k of it) if (k !== null && (typeof k === 'object' || typeof k === 'function') && !(k instanceof D)) return true; },
    time: (d) => getTime.call(d), cut: (s, n) => slice.call(s, 0, n),
    newMap: (a) => new M(a),
    newSet: (a) => new S(a),
    bigHex: (b) => b < 0n ? '-' + (-b).toString(16) : b.toString(16),
    fromHex: (s) => { s = String(s); return s[0] === '-' ? -B('0x' + s.slice(1)) : B('0x' + s); },
    rejAdd: (p, r) => { if (rej.size < 10000) rej.set(p, r); },
    rejDel: (p) => { rej.delete(p); },
    rejTake: (has, e) => { const out = []; for (const r of rej.values()) if (!has || r !== e) out.push(r); rej.clear(); return out; },
    disableDynamic: (t, e) => {
      dp(t, 'prototype', { value: F.prototype });
      for (const p of protos) dp(p, 'constructor', { value: t, writable: true, configurable: true });
      dp(G, 'Function', { value: t, writable: true, configurable: true });
      dp(G, 'eval', { value: e, writable: true, configurable: true });
    },
    enableDynamic: () => {
      protos.forEach((p, i) => dp(p, 'constructor', { value: ctors[i], writable: true, configurable: true }));
      dp(G, 'Function', { value: F, writable: true, configurable: true });
      dp(G, 'eval', { value: E, writable: true, configurable: true });
    },
  };
})()
// The bootstrap. qj_init (init.c) evaluates this file once, at build time, as "<quickjail>":
// the object the expression above returns becomes g.helpers and is baked into the snapshot.
// It holds the original builtins, so the C code's helpers keep working whatever a program
// redefines:
//   mapEntries setValues keyCheck time bigHex   encode.c (Map, Set, Date, BigInt -> message)
//   cut                                         encode.c (the start of a long string in logs)
//   newMap newSet fromHex                       decode.c (message -> Map, Set, BigInt)
//   rejAdd rejDel rejTake                       rejections.c (unhandled rejections)
//   disableDynamic enableDynamic                builtins.c (eval and Function off / on)
// sandbox/_build.py embeds the file byte for byte as a C string literal. Notes go here, below
// the code, so that editing them never moves a line of code (frames say <quickjail>:line:col).
