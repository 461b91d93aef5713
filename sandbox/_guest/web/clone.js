// structuredClone (HTML structured serialize + deserialize in one realm, in one pass): a
// work stack instead of recursion, so any depth clones within the memory limit; the memory
// map keeps cycles and shared references; DataCloneError for what cannot be cloned. Blob and
// File (blob.js) clone to copies sharing their immutable bytes.
(native) => {
  const { classOf, isBlob, blobClone } = native;   // blob.js runs before this file
  const uncurry = Function.prototype.bind.bind(Function.prototype.call);
  const getter = (C, name) => uncurry(Object.getOwnPropertyDescriptor(C.prototype, name).get);
  const { defineProperty, keys: ownKeys, hasOwn, getOwnPropertyDescriptor: gopd } = Object;
  const { isArray } = Array;
  const [MapC, SetC, ArrayC, AB, U8, DateC, RegExpC, DV, DOMExc] = [Map, Set, Array, ArrayBuffer, Uint8Array, Date, RegExp, DataView, DOMException];
  const mapGet = uncurry(Map.prototype.get), mapSet = uncurry(Map.prototype.set), mapHas = uncurry(Map.prototype.has);
  const mapForEach = uncurry(Map.prototype.forEach), setAdd = uncurry(Set.prototype.add), setForEach = uncurry(Set.prototype.forEach);
  const u8Set = uncurry(Uint8Array.prototype.set);
  const abLength = getter(AB, "byteLength"), abDetached = getter(AB, "detached");
  const abResizable = getter(AB, "resizable"), abMax = getter(AB, "maxByteLength"), abTransfer = uncurry(AB.prototype.transfer);
  const TA = Object.getPrototypeOf(Uint8Array);
  const taBuffer = getter(TA, "buffer"), taOffset = getter(TA, "byteOffset"), taLength = getter(TA, "length");
  const dvBuffer = getter(DV, "buffer"), dvOffset = getter(DV, "byteOffset"), dvLength = getter(DV, "byteLength");
  const reSource = getter(RegExpC, "source"), reFlags = getter(RegExpC, "flags");
  const dateValue = uncurry(Date.prototype.getTime);
  const { get: stackGet, set: stackSet } = gopd(Error.prototype, "stack");
  const errStack = uncurry(stackGet), setStack = uncurry(stackSet);
  const exName = getter(DOMExc, "name"), exMessage = getter(DOMExc, "message");
  const unbox = (C) => [classOf(Object(C === BigInt ? 0n : C === Symbol ? Symbol() : C())), uncurry(C.prototype.valueOf)];
  const boxes = [Boolean, Number, String, BigInt, Symbol].map(unbox);
  const SYMBOL_OBJECT = boxes.pop()[0];
  const typed = ["Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array", "Uint32Array",
    "Float16Array", "Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array"]
    .filter((n) => globalThis[n]).map((n) => [classOf(new globalThis[n](0)), globalThis[n]]);
  const ERRORS = { Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError };
  const id = {
    object: classOf({}), array: classOf([]), error: classOf(new Error()), date: classOf(new Date(0)), regexp: classOf(/x/),
    map: classOf(new Map()), set: classOf(new Set()), buffer: classOf(new AB(0)), view: classOf(new DV(new AB(0))),
    proxy: classOf(new Proxy({}, {})), exception: classOf(new DOMExc()),
  };
  const dce = (what) => new DOMExc(`${what} could not be cloned.`, "DataCloneError");
  const data = (o, k, value, enumerable = true) => defineProperty(o, k, { value, writable: true, enumerable, configurable: true });
  const PROPS = 0, HIDDEN = 1, MAP = 2, SET = 3;

  const structuredClone = function structuredClone(value, options = undefined) {
    if (arguments.length < 1) throw new TypeError("structuredClone: 1 argument required, but only 0 present.");
    if (options !== undefined && options !== null && typeof options !== "object" && typeof options !== "function") {
      throw new TypeError("structuredClone: options is not an object");
    }
    const transfer = [];
    if (options?.transfer !== undefined) {
      for (const t of options.transfer) {
        if (t === null || (typeof t !== "object" && typeof t !== "function")) throw new TypeError("structuredClone: transfer list items must be objects");
        transfer[transfer.length] = t;
      }
    }
    const memory = new MapC();
    for (const t of transfer) {
      if (classOf(t) !== id.buffer) throw dce("A value in the transfer list that is not an ArrayBuffer");
      if (mapHas(memory, t)) throw dce("An ArrayBuffer listed twice in the transfer list");
      mapSet(memory, t, undefined);
    }
    const stack = [];
    const copyBuffer = (b) => {
      if (abDetached(b)) throw dce("A detached ArrayBuffer");
      const len = abLength(b);
      const d = abResizable(b) ? new AB(len, { maxByteLength: abMax(b) }) : new AB(len);
      u8Set(new U8(d), new U8(b));
      return d;
    };
    const copy = (v) => {
      const t = typeof v;
      if (t === "symbol") throw dce("A symbol");
      if (v === null || (t !== "object" && t !== "function")) return v;
      if (mapHas(memory, v) && mapGet(memory, v) !== undefined) return mapGet(memory, v);
      if (t === "function") throw dce("A function");
      const c = classOf(v);
      let d, frame = null;
      if (c === id.object && isBlob(v)) d = blobClone(v);
      else if (c === id.object || (c === id.proxy && isArray(v))) {
        d = c === id.object ? {} : new ArrayC(v.length);
        frame = [PROPS, v, d, ownKeys(v)];
      } else if (c === id.array) {
        d = new ArrayC(v.length);
        frame = [PROPS, v, d, ownKeys(v)];
      } else if (c === id.date) d = new DateC(dateValue(v));
      else if (c === id.regexp) d = new RegExpC(reSource(v), reFlags(v));
      else if (c === id.buffer) d = copyBuffer(v);
      else if (c === id.map) {
        d = new MapC();
        const items = [];
        mapForEach(v, (val, key) => (items[items.length] = key, items[items.length] = val));
        frame = [MAP, v, d, items, []];
      } else if (c === id.set) {
        d = new SetC();
        const items = [];
        setForEach(v, (key) => (items[items.length] = key));
        frame = [SET, v, d, items, []];
      } else if (c === id.view) {
        d = new DV(copy(dvBuffer(v)), dvOffset(v), dvLength(v));
      } else if (c === id.exception) d = new DOMExc(exMessage(v), exName(v));
      else if (c === id.error) {
        let name = v.name;
        if (typeof name !== "string" || !hasOwn(ERRORS, name)) name = "Error";
        const m = gopd(v, "message");
        d = m && "value" in m ? new ERRORS[name](`${m.value}`) : new ERRORS[name]();
        const stack = errStack(v);
        if (typeof stack === "string") setStack(d, stack);
        const cause = gopd(v, "cause");
        if (cause && "value" in cause) frame = [HIDDEN, v, d, ["cause"]];
      } else {
        const box = boxes.find(([b]) => b === c);
        const ta = typed.find(([b]) => b === c);
        if (box) d = Object(box[1](v));
        else if (ta) d = new ta[1](copy(taBuffer(v)), taOffset(v), taLength(v));
        else throw dce(c === SYMBOL_OBJECT ? "A Symbol object" : c === id.proxy ? "A Proxy" : "This kind of object");
      }
      mapSet(memory, v, d);
      if (frame) stack[stack.length] = { kind: frame[0], src: frame[1], dst: frame[2], items: frame[3], out: frame[4], i: 0 };
      return d;
    };
    const result = copy(value);
    while (stack.length) {
      const f = stack[stack.length - 1];
      if (f.i < f.items.length) {
        const k = f.items[f.i++];
        if (f.kind === MAP || f.kind === SET) f.out[f.out.length] = copy(k);
        else if (f.kind === HIDDEN) data(f.dst, k, copy(gopd(f.src, k).value), false);
        else if (hasOwn(f.src, k)) data(f.dst, k, copy(f.src[k]));
        continue;
      }
      stack.length--;
      if (f.kind === MAP) for (let i = 0; i < f.out.length; i += 2) mapSet(f.dst, f.out[i], f.out[i + 1]);
      if (f.kind === SET) for (let i = 0; i < f.out.length; i++) setAdd(f.dst, f.out[i]);
    }
    for (const t of transfer) if (abDetached(t)) throw dce("A detached ArrayBuffer in the transfer list");
    for (const t of transfer) abTransfer(t);
    return result;
  };
  defineProperty(globalThis, "structuredClone", { value: structuredClone, writable: true, configurable: true });
};
