(native) => {
  const G = globalThis, P = Promise, apply = Reflect.apply, dp = Object.defineProperty;
  const gopd = Object.getOwnPropertyDescriptors, entries = Object.entries;
  const TE = TypeError, RE = RangeError, isNaN = Number.isNaN;
  const pThen = P.prototype.then, pResolve = P.resolve, pReject = P.reject;
  const noop = () => {};
  const U8 = Uint8Array, TypedArray = Object.getPrototypeOf(U8);
  const taTag = Object.getOwnPropertyDescriptor(TypedArray.prototype, Symbol.toStringTag).get;
  const taSet = TypedArray.prototype.set;
  const isUint8Array = (x) => apply(taTag, x, []) === "Uint8Array";
  const copyBytes = (u8) => new U8(u8);
  const taLength = Object.getOwnPropertyDescriptor(TypedArray.prototype, "length").get;
  const u8len = (u8) => apply(taLength, u8, []);
  const setBytes = (out, u8, at) => { apply(taSet, out, [u8, at]); };

  // Promises, through the intrinsics captured here: a program replacing Promise.prototype.then
  // or Promise.resolve reaches none of the streams' own reactions
  const then = (p, f, r) => apply(pThen, p, [f, r]);
  const resolved = (v) => apply(pResolve, P, [v]);
  const rejected = (e) => {
    const p = apply(pReject, P, [e]);
    then(p, undefined, noop);
    return p;
  };
  const markHandled = (p) => { then(p, undefined, noop); };
  // Web IDL "a promise resolved with x": a new promise, so a promise x is adopted two
  // reactions later (the order WPT checks); a promise of the streams' own (a TransformStream's
  // start) is adopted as late, through the captured `then`
  const own = new WeakSet(), ownAdd = WeakSet.prototype.add, ownHas = WeakSet.prototype.has;
  const markOwn = (p) => { apply(ownAdd, own, [p]); };
  function resolvedWith(x) {
    if (!apply(ownHas, own, [x])) return new P((res) => res(x));
    const d = deferred();
    upon(resolved(undefined), () => follow(d, x));
    return d.p;
  }
  // a settleable promise that remembers whether it is settled (stream "closed"/"ready" slots)
  function deferred() {
    const d = { __proto__: null, p: undefined, res: undefined, rej: undefined, pending: true };
    d.p = new P((res, rej) => { d.res = res; d.rej = rej; });
    return d;
  }
  const settle = (d, v) => { if (d.pending) { d.pending = false; d.res(v); } };
  const fail = (d, e) => { if (d.pending) { d.pending = false; d.rej(e); } };
  const settled = (v) => { const d = deferred(); settle(d, v); return d; };
  const failed = (e) => { const d = deferred(); fail(d, e); markHandled(d.p); return d; };
  // "upon fulfillment / rejection": reactions whose own result is never observed
  const upon = (p, f, r) => markHandled(then(p, f, r));
  // "resolve d with p" for an internal promise p, without looking up p.then
  const follow = (d, p) => upon(p, (v) => settle(d, v), (e) => fail(d, e));
  // "then" for reactions that may return a promise: it is followed through the captured
  // `then`, where returning it from a plain reaction would look up its (replaceable) `then`
  function chain(p, f, r) {
    const d = deferred();
    const run = (g, v) => {
      try {
        follow(d, resolved(g(v)));
      } catch (e) {
        fail(d, e);
      }
    };
    upon(p, (v) => run(f, v), r === undefined ? (e) => fail(d, e) : (e) => run(r, e));
    return d.p;
  }
  // a reaction to every promise of a list (Promise.all without the observable lookups)
  function all(list) {
    const d = deferred();
    let left = list.length;
    if (!left) settle(d, undefined);
    for (let i = 0; i < list.length; i++)
      upon(list[i], () => { if (--left === 0) settle(d, undefined); }, (e) => fail(d, e));
    return d.p;
  }
  // invoke a callback of an underlying source/sink/transformer, promise-returning
  function promiseCall(f, self, args) {
    if (f === undefined) return resolved(undefined);
    try {
      return resolvedWith(apply(f, self, args));
    } catch (e) {
      return rejected(e);
    }
  }

  // A FIFO for the queues of chunks and requests: O(1) at both ends, none of Array's methods
  class Queue {
    constructor() { this.items = []; this.head = 0; }
    get length() { return this.items.length - this.head; }
    push(v) { this.items[this.items.length] = v; }
    peek() { return this.items[this.head]; }
    shift() {
      const items = this.items, v = items[this.head];
      items[this.head++] = undefined;
      if (this.head === items.length) { this.items = []; this.head = 0; }
      else if (this.head >= 1024 && this.head * 2 >= items.length) {
        const rest = [];
        for (let i = this.head; i < items.length; i++) rest[rest.length] = items[i];
        this.items = rest;
        this.head = 0;
      }
      return v;
    }
  }
  Object.setPrototypeOf(Queue.prototype, null);

  // Streams "queue-with-sizes": a container holds queue and queueTotalSize
  const isNonNegative = (v) => typeof v === "number" && !isNaN(v) && v >= 0;
  function enqueueValueWithSize(c, value, size) {
    if (!isNonNegative(size) || size === Infinity)
      throw new RE("The size of a chunk must be a finite, non-negative number");
    c.queue.push({ __proto__: null, value, size });
    c.queueTotalSize += size;
  }
  function dequeueValue(c) {
    const pair = c.queue.shift();
    c.queueTotalSize -= pair.size;
    if (c.queueTotalSize < 0) c.queueTotalSize = 0;
    return pair.value;
  }
  const peekQueueValue = (c) => c.queue.peek().value;
  function resetQueue(c) { c.queue = new Queue(); c.queueTotalSize = 0; }

  const object = (v) => (typeof v === "object" && v !== null) || typeof v === "function";
  // Web IDL conversions of the dictionaries the constructors take
  function dict(v, what) {
    if (v === undefined || v === null) return undefined;
    if (!object(v)) throw new TE(`${what} is not an object`);
    return v;
  }
  function callback(d, key, what) {
    const f = d === undefined ? undefined : d[key];
    if (f !== undefined && typeof f !== "function") throw new TE(`${what}.${key} is not a function`);
    return f;
  }
  // QueuingStrategy: { highWaterMark: unrestricted double, size: callback }, read in that order
  function strategy(s, what) {
    const d = dict(s, what);
    let hwm = d === undefined ? undefined : d.highWaterMark;
    if (hwm !== undefined) hwm = +hwm;
    const size = callback(d, "size", what);
    return { __proto__: null, hwm, size };
  }
  function extractHighWaterMark(st, dflt) {
    if (st.hwm === undefined) return dflt;
    if (isNaN(st.hwm) || st.hwm < 0) throw new RE("The highWaterMark must be a non-negative number");
    return st.hwm;
  }
  function extractSizeAlgorithm(st) {
    const size = st.size;
    if (size === undefined) return () => 1;
    return (chunk) => +apply(size, undefined, [chunk]);
  }

  // Web IDL: operations and attributes are enumerable, the class string is the interface's
  function idl(cls, name, global = true) {
    for (const obj of [cls, cls.prototype])
      for (const [k, d] of entries(gopd(obj)))
        if (k !== "prototype" && k !== "constructor" && k !== "length" && k !== "name")
          dp(obj, k, { ...d, enumerable: true });
    dp(cls.prototype, Symbol.toStringTag, { value: name, configurable: true });
    if (global) dp(G, name, { value: cls, writable: true, configurable: true });
  }
  const INTERNAL = { __proto__: null };   // passed to a constructor by the streams only

  // ByteLengthQueuingStrategy and CountQueuingStrategy; their size functions are shared
  const byteSize = { size(chunk) { return chunk.byteLength; } }.size;
  const countSize = { size() { return 1; } }.size;
  function strategyInit(init, name) {
    if (arguments.length < 1 || init === undefined) throw new TE(`${name}: 1 argument required`);
    if (!object(init)) throw new TE(`${name}: init is not an object`);
    const hwm = init.highWaterMark;
    if (hwm === undefined) throw new TE(`${name}: init.highWaterMark is required`);
    return +hwm;
  }
  class ByteLengthQueuingStrategy {
    #hwm;
    constructor(init) { this.#hwm = strategyInit(init, "ByteLengthQueuingStrategy"); }
    get highWaterMark() { return this.#hwm; }
    get size() { this.#hwm; return byteSize; }
  }
  class CountQueuingStrategy {
    #hwm;
    constructor(init) { this.#hwm = strategyInit(init, "CountQueuingStrategy"); }
    get highWaterMark() { return this.#hwm; }
    get size() { this.#hwm; return countSize; }
  }
  idl(ByteLengthQueuingStrategy, "ByteLengthQueuingStrategy");
  idl(CountQueuingStrategy, "CountQueuingStrategy");

  // what the later streams_*.js files share; each adds its own abstract operations to it
  native.streams = {
    __proto__: null, P, then, resolved, resolvedWith, markOwn, rejected, markHandled, deferred, settle, fail, settled,
    failed, upon, follow, chain, all, promiseCall, Queue, enqueueValueWithSize, dequeueValue,
    peekQueueValue, resetQueue, object, dict, callback, strategy, extractHighWaterMark,
    extractSizeAlgorithm, idl, INTERNAL, noop, isUint8Array, copyBytes, setBytes, u8len,
  };
}
// Shared by the streams_*.js files (WHATWG Streams): the promise helpers, the queue-with-sizes
// operations, the dictionary conversions and the two queuing strategies. Names sort so that
// this file runs first; the others read one another's operations from native.streams when
// called, never at build time.
