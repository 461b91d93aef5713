// Blob and File (W3C File API). A Blob holds its bytes in one Uint8Array that nothing outside
// this file and its friends (fetch_*.js, formdata.js, clone.js, through `native`) can reach, and
// that is never written after the constructor: slice() shares it, every read copies out of it.
// Runs before clone.js, which captures native.blobClone for structuredClone.
(native) => {
  const { utf8Encode, utf8Decode } = native;
  const G = globalThis, TE = TypeError, U8 = Uint8Array, AB = ArrayBuffer;
  const apply = Reflect.apply, ownKeys = Reflect.ownKeys;
  const { defineProperty: dp, getOwnPropertyDescriptor: gopd } = Object;
  const getter = (C, name) => gopd(C.prototype, name).get;
  const TA = Object.getPrototypeOf(U8);
  const taTag = getter(TA, Symbol.toStringTag), taBuffer = getter(TA, "buffer");
  const taOffset = getter(TA, "byteOffset"), taByteLength = getter(TA, "byteLength");
  const taSet = TA.prototype.set, taSlice = TA.prototype.slice, taSub = TA.prototype.subarray;
  const dvBuffer = getter(DataView, "buffer"), dvOffset = getter(DataView, "byteOffset");
  const dvLength = getter(DataView, "byteLength");
  const abLength = getter(AB, "byteLength"), abDetached = getter(AB, "detached");
  const SAB = G.SharedArrayBuffer, sabLength = SAB && getter(SAB, "byteLength");
  const iterSym = Symbol.iterator, now = Date.now, trunc = Math.trunc, floor = Math.floor;
  const min = Math.min, max = Math.max, isFinite = Number.isFinite;
  const strReplace = String.prototype.replace, strToLower = String.prototype.toLowerCase;
  const strWellFormed = String.prototype.toWellFormed, reTest = RegExp.prototype.test;
  const PromiseC = Promise, resolve = Promise.resolve.bind(Promise);
  const tryGet = (f, x) => {
    try {
      return [apply(f, x, [])];
    } catch {
      return null;
    }
  };
  const object = (v) => v !== null && (typeof v === "object" || typeof v === "function");
  const usv = (v) => apply(strWellFormed, `${v}`, []);

  // The bytes of a BufferSource (ArrayBuffer, SharedArrayBuffer or a view) as a Uint8Array
  // over the same memory, or null when x is none of those.
  const viewOf = (x) => {
    if (!object(x)) return null;
    if (tryGet(abLength, x)) return apply(abDetached, x, []) ? new U8(0) : new U8(x);
    if (sabLength && tryGet(sabLength, x)) return new U8(x);
    const tag = tryGet(taTag, x);
    // (no array destructuring at run time: a program can replace the array iterator's next)
    const getters = tag && tag[0] ? [taBuffer, taOffset, taByteLength]
      : tryGet(dvBuffer, x) ? [dvBuffer, dvOffset, dvLength] : null;
    if (!getters) return null;
    const buf = getters[0], off = getters[1], len = getters[2];
    const b = apply(buf, x, []);
    if (tryGet(abLength, b) && apply(abDetached, b, [])) return new U8(0);
    return new U8(b, apply(off, x, []), apply(len, x, []));
  };
  const copy = (u8) => apply(taSlice, u8, []);
  const concat = (chunks) => {
    let n = 0;
    for (let i = 0; i < chunks.length; i++) n += chunks[i].length;
    const out = new U8(n);
    for (let i = 0, at = 0; i < chunks.length; at += chunks[i].length, i++) apply(taSet, out, [chunks[i], at]);
    return out;
  };
  // a Blob's type: lowercased, or "" when any character is outside U+0020..U+007E
  const normType = (t) => {
    t = `${t}`;
    return apply(reTest, /[^\x20-\x7e]/, [t]) ? "" : apply(strToLower, t, []);
  };
  // UTF-8 decode (a leading BOM is dropped, ill-formed input becomes U+FFFD)
  const decode = (u8) => {
    const skip = u8.length >= 3 && u8[0] === 0xef && u8[1] === 0xbb && u8[2] === 0xbf ? 3 : 0;
    return utf8Decode(skip ? apply(taSub, u8, [skip]) : u8, false, false)[0];
  };
  native.bytesOf = viewOf;
  native.concatBytes = concat;
  native.utf8Text = decode;

  let making = null;          // set while this file makes a Blob or File from bytes it owns
  let isBlob, bytesOfBlob, typeOfBlob, isFile, fileOf;

  // Web IDL converts the arguments left to right: the parts (each a Blob's bytes, a copy of a
  // BufferSource's or a string) before the options whose `endings` applies to the strings
  const partsOf = (parts) => {
    if (parts === undefined) return [];
    if (!object(parts)) throw new TE("Blob: blobParts is not a sequence");
    const method = parts[iterSym];
    if (typeof method !== "function") throw new TE("Blob: blobParts is not iterable");
    const items = [];
    for (const part of { [iterSym]: () => apply(method, parts, []) }) {
      if (isBlob(part)) items[items.length] = bytesOfBlob(part);
      else {
        const view = viewOf(part);
        items[items.length] = view ? copy(view) : usv(part);
      }
    }
    return items;
  };
  const partsToBytes = (items, endings) => {
    for (let i = 0; i < items.length; i++) {
      let s = items[i];
      if (typeof s !== "string") continue;
      if (endings === "native") s = apply(strReplace, s, [/\r\n|\r/g, "\n"]);
      items[i] = utf8Encode(s);
    }
    return items.length === 0 ? new U8(0) : items.length === 1 ? items[0] : concat(items);
  };
  const bagOf = (options, what) => {
    if (options === undefined || options === null) return { endings: "transparent", type: "" };
    if (!object(options)) throw new TE(`${what}: options is not an object`);
    const e = options.endings;
    const endings = e === undefined ? "transparent" : `${e}`;
    if (endings !== "transparent" && endings !== "native") {
      throw new TE(`${what}: endings must be "transparent" or "native"`);
    }
    const t = options.type;
    return { endings, type: t === undefined ? "" : normType(t), options };
  };
  // Web IDL [Clamp] long long: NaN is 0, halves round to even; then relative to the size
  const clampIndex = (v, size) => {
    let x = +v;
    if (x !== x) x = 0;
    const f = floor(x), d = x - f;
    const n = d < 0.5 ? f : d > 0.5 ? f + 1 : f % 2 === 0 ? f : f + 1;
    return n < 0 ? max(size + n, 0) : min(n, size);
  };

  class Blob {
    #bytes;
    #type;
    static {
      isBlob = (x) => object(x) && #bytes in x;
      bytesOfBlob = (b) => b.#bytes;
      typeOfBlob = (b) => b.#type;
    }
    constructor(blobParts = undefined, options = undefined) {
      if (making) {
        this.#bytes = making.bytes;
        this.#type = making.type;
        making = null;
        return;
      }
      const items = partsOf(blobParts);
      const bag = bagOf(options, "Blob");
      this.#bytes = partsToBytes(items, bag.endings);
      this.#type = bag.type;
    }
    get size() {
      return this.#bytes.length;
    }
    get type() {
      return this.#type;
    }
    slice(start = undefined, end = undefined, contentType = undefined) {
      const bytes = this.#bytes, n = bytes.length;
      const from = start === undefined ? 0 : clampIndex(start, n);
      const to = end === undefined ? n : clampIndex(end, n);
      const type = contentType === undefined ? "" : normType(contentType);
      return makeBlob(apply(taSub, bytes, [from, max(to, from)]), type);
    }
    stream() {
      const bytes = this.#bytes;
      const fromBytes = native.streamFromBytes;
      if (typeof fromBytes !== "function") throw new TE("Blob.stream: streams are not available");
      return fromBytes(copy(bytes));
    }
    text() {
      return isBlob(this) ? resolve(decode(this.#bytes)) : rejectBrand("text");
    }
    arrayBuffer() {
      return isBlob(this) ? resolve(apply(taBuffer, copy(this.#bytes), [])) : rejectBrand("arrayBuffer");
    }
    bytes() {
      return isBlob(this) ? resolve(copy(this.#bytes)) : rejectBrand("bytes");
    }
  }
  const rejectBrand = (what) => PromiseC.reject(new TE(`Blob.${what}: 'this' is not a Blob`));

  class File extends Blob {
    #name;
    #lastModified;
    static {
      isFile = (x) => object(x) && #name in x;
      fileOf = (f) => [f.#name, f.#lastModified];
    }
    constructor(fileBits, fileName, options = undefined) {
      if (making) {
        const m = making;
        super();
        this.#name = m.name;
        this.#lastModified = m.lastModified;
        return;
      }
      if (arguments.length < 2) {
        throw new TE(`File: 2 arguments required, but only ${arguments.length} present.`);
      }
      const items = partsOf(fileBits);
      const name = usv(fileName);
      const bag = bagOf(options, "File");
      const bytes = partsToBytes(items, bag.endings);
      let lastModified = bag.options?.lastModified;
      lastModified = lastModified === undefined ? now() : isFinite(+lastModified) ? trunc(+lastModified) : 0;
      making = { bytes, type: bag.type };
      super();
      this.#name = name;
      this.#lastModified = lastModified;
    }
    get name() {
      return this.#name;
    }
    get lastModified() {
      return this.#lastModified;
    }
  }

  // make a Blob or File over bytes the caller gives up (they are not copied)
  const makeBlob = (bytes, type) => {
    making = { bytes, type };
    return new Blob();
  };
  const makeFile = (bytes, name, type, lastModified = now()) => {
    making = { bytes, type, name, lastModified };
    return new File();
  };

  for (const [C, name] of [[Blob, "Blob"], [File, "File"]]) {
    for (const obj of [C, C.prototype]) {
      for (const k of ownKeys(obj)) {
        if (typeof k === "string" && k !== "prototype" && k !== "constructor" && k !== "length" && k !== "name") {
          dp(obj, k, { ...gopd(obj, k), enumerable: true });
        }
      }
    }
    dp(C.prototype, Symbol.toStringTag, { value: name, configurable: true });
    dp(G, name, { value: C, writable: true, configurable: true });
  }

  native.isBlob = isBlob;
  native.isFile = isFile;
  native.blobBytes = bytesOfBlob;
  native.blobType = typeOfBlob;
  native.fileInfo = fileOf;
  native.makeBlob = makeBlob;
  native.makeFile = makeFile;
  native.normBlobType = normType;
  // structuredClone: a copy that shares the (never written) bytes
  native.blobClone = (b) => {
    if (!isBlob(b)) return null;
    if (isFile(b)) {
      const info = fileOf(b);
      return makeFile(bytesOfBlob(b), info[0], typeOfBlob(b), info[1]);
    }
    return makeBlob(bytesOfBlob(b), typeOfBlob(b));
  };
};
