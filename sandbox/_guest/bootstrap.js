(() => {
  const entries = Map.prototype.entries, values = Set.prototype.values;
  const getTime = Date.prototype.getTime, from = Array.from, slice = String.prototype.slice;
  const B = BigInt, D = Date, M = Map, S = Set, dp = Object.defineProperty, gp = Object.getPrototypeOf;
  const G = globalThis, F = Function, E = G.eval;
  const protos = [gp(function(){}), gp(async function(){}), gp(function*(){}),
                  gp(async function*(){})];
  const ctors = protos.map((p) => p.constructor);
  // the original descriptors: switching dynamic code swaps values, never attributes
  const gd = Object.getOwnPropertyDescriptor, P = Proxy, keys = Object.keys, freeze = Object.freeze;
  const own = (o, k) => { const d = gd(o, k); return { __proto__: null, writable: d.writable,
    enumerable: d.enumerable, configurable: d.configurable }; };
  const ctorAttrs = protos.map((p) => own(p, 'constructor'));
  const fnAttrs = own(G, 'Function'), evalAttrs = own(G, 'eval');
  const with_ = (a, value) => ({ __proto__: null, value, writable: a.writable,
    enumerable: a.enumerable, configurable: a.configurable });
  const ap = Reflect.apply, TA = gp(Int8Array.prototype), DV = DataView;
  const [taB, taO, taL] = ['buffer', 'byteOffset', 'byteLength'].map((k) => gd(TA, k).get);
  const [dvB, dvO, dvL] = ['buffer', 'byteOffset', 'byteLength'].map((k) => gd(DV.prototype, k).get);
  return {
    mapEntries: (m) => from(entries.call(m)),
    setValues: (s) => from(values.call(s)),
    keyCheck: (c) => { const it = c instanceof M ? from(entries.call(c), (p) => p[0]) : from(values.call(c));
      for (const k of it) if (k !== null && (typeof k === 'object' || typeof k === 'function') && !(k instanceof D)) return true; },
    time: (d) => getTime.call(d), cut: (s, n) => slice.call(s, 0, n),
    newMap: (a) => new M(a),
    newSet: (a) => new S(a),
    taView: (v) => [ap(taB, v, []), ap(taO, v, []), ap(taL, v, [])],
    dvView: (v) => [ap(dvB, v, []), ap(dvO, v, []), ap(dvL, v, [])],
    newDataView: (b) => new DV(b),
    bigHex: (b) => b < 0n ? '-' + (-b).toString(16) : b.toString(16),
    fromHex: (s) => { s = String(s); return s[0] === '-' ? -B('0x' + s.slice(1)) : B('0x' + s); },
    disableDynamic: (t, e) => {
      dp(t, 'prototype', { value: F.prototype });
      protos.forEach((p, i) => dp(p, 'constructor', with_(ctorAttrs[i], t)));
      dp(G, 'Function', with_(fnAttrs, t));
      dp(G, 'eval', with_(evalAttrs, e));
    },
    enableDynamic: () => {
      protos.forEach((p, i) => dp(p, 'constructor', with_(ctorAttrs[i], ctors[i])));
      dp(G, 'Function', with_(fnAttrs, F));
      dp(G, 'eval', with_(evalAttrs, E));
    },
    namespace: (o, key) => {
      const fallback = o[key], t = {};
      for (const k of keys(o)) if (k !== key) t[k] = o[k];
      freeze(t);
      return new P(t, { get: (t, k, r) => typeof k !== 'string' || k === 'then' || k in t
        ? t[k] : (...args) => fallback(k, ...args) });
    },
  };
})()
// The bootstrap. qj_init (init.c) evaluates this file once, at build time, as "<quickjail>":
// the object the expression above returns becomes g.helpers and is baked into the snapshot.
// It holds the original builtins, so the C code's helpers keep working whatever a program
// redefines:
//   mapEntries setValues keyCheck time bigHex   encode.c (Map, Set, Date, BigInt -> message)
//   cut                                         encode.c (the start of a long string in logs)
//   taView dvView                               encode.c (a typed array's or DataView's bytes)
//   newMap newSet fromHex newDataView           decode.c (message -> Map, Set, BigInt, DataView)
//   (rejections.c's rejAdd rejDel rejNotify rejTake reportException come from web/global.js)
//   disableDynamic enableDynamic                builtins.c (eval and Function off / on)
//   namespace                                   builtins.c (a global namespace's fallback)
// sandbox/_build.py embeds the file byte for byte as a C string literal. Notes go here, below
// the code, so that editing them never moves a line of code (frames say <quickjail>:line:col).
