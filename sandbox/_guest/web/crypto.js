(native) => {
  const G = globalThis, dp = Object.defineProperty, gopd = Object.getOwnPropertyDescriptors;
  const TE = TypeError, DOMException = G.DOMException, U8 = Uint8Array, P = Promise;
  const apply = Reflect.apply, gp = Object.getPrototypeOf;
  const randomFill = native.randomFill, fillTyped = native.fillTyped, digest = native.digest;
  const resolve = (v) => apply(P.resolve, P, [v]), reject = (e) => apply(P.reject, P, [e]);
  // the internal slots, read through the intrinsics' own getters
  const TA = gp(U8);
  const taTag = gopd(TA.prototype)[Symbol.toStringTag].get;
  const taBuffer = gopd(TA.prototype).buffer.get;
  const taOffset = gopd(TA.prototype).byteOffset.get;
  const taLength = gopd(TA.prototype).byteLength.get;
  const dvBuffer = gopd(DataView.prototype).buffer.get;
  const dvOffset = gopd(DataView.prototype).byteOffset.get;
  const dvLength = gopd(DataView.prototype).byteLength.get;
  const abLength = gopd(ArrayBuffer.prototype).byteLength.get;
  const toLower = String.prototype.toLowerCase, padStart = String.prototype.padStart;
  const toString16 = Number.prototype.toString;
  const INTEGER = ["Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array",
                   "Int32Array", "Uint32Array", "BigInt64Array", "BigUint64Array"];
  const includes = Array.prototype.includes, hasOwn = Object.prototype.hasOwnProperty;
  // crypto.subtle.digest's algorithms, in web_crypto.c's order
  const DIGESTS = { "sha-1": 0, "sha-256": 1, "sha-384": 2, "sha-512": 3 };
  const MAX_RANDOM_BYTES = 65536;

  function idl(cls, name) {
    for (const [k, d] of Object.entries(gopd(cls.prototype)))
      if (k !== "constructor") dp(cls.prototype, k, { ...d, enumerable: true });
    dp(cls.prototype, Symbol.toStringTag, { value: name, configurable: true });
    dp(G, name, { value: cls, writable: true, configurable: true });
  }
  let making = false;   // the interfaces cannot be constructed by programs
  function illegal() {
    if (!making) throw new TE("Illegal constructor");
  }
  const tag = (v) => apply(taTag, v, []);

  // a view of the bytes a BufferSource holds, or undefined when v is none
  function bytesOf(v) {
    if (typeof v !== "object" || v === null) return undefined;
    if (tag(v) !== undefined)
      return new U8(apply(taBuffer, v, []), apply(taOffset, v, []), apply(taLength, v, []));
    if (isDataView(v))
      return new U8(apply(dvBuffer, v, []), apply(dvOffset, v, []), apply(dvLength, v, []));
    try {
      apply(abLength, v, []);
      return new U8(v);
    } catch {}
    return undefined;
  }

  function isDataView(v) {
    try { apply(dvLength, v, []); return true; } catch { return false; }
  }

  let isSubtle;
  class SubtleCrypto {
    #brand = true;
    constructor() { illegal(); }
    static { isSubtle = (v) => typeof v === "object" && v !== null && #brand in v; }
    digest(algorithm, data) {
      try {
        if (!isSubtle(this)) throw new TE("Illegal invocation");
        if (arguments.length < 2) throw new TE("digest: 2 arguments required");
        let name = algorithm;
        if (typeof algorithm === "object" && algorithm !== null) {
          name = algorithm.name;
          if (name === undefined) throw new TE("digest: the algorithm has no name");
        }
        name = apply(toLower, String(name), []);
        const bytes = bytesOf(data);
        if (bytes === undefined)
          throw new TE("digest: data is not an ArrayBuffer, a typed array or a DataView");
        if (!apply(hasOwn, DIGESTS, [name]))
          throw new DOMException(`Unrecognized digest algorithm: ${name}`, "NotSupportedError");
        const index = DIGESTS[name];
        // the bytes are copied now, as the spec says; the hash is ready when the promise is
        return resolve(digest(index, new U8(bytes)));
      } catch (e) {
        return reject(e);
      }
    }
  }
  class Crypto {
    #subtle;
    constructor() { illegal(); making = true; try { this.#subtle = new SubtleCrypto(); } finally { making = false; } }
    get subtle() { return this.#subtle; }
    getRandomValues(array) {
      this.#subtle;   // brand check: TypeError when `this` is not a Crypto
      if (arguments.length < 1) throw new TE("getRandomValues: 1 argument required");
      if (fillTyped(array, MAX_RANDOM_BYTES)) return array;   // the common case, in one call
      const t = typeof array === "object" && array !== null ? tag(array) : undefined;
      if (t === undefined) {
        if (typeof array === "object" && array !== null && isDataView(array))
          throw new DOMException("getRandomValues: a DataView is not an integer array", "TypeMismatchError");
        throw new TE("getRandomValues: the argument is not a typed array");
      }
      if (!apply(includes, INTEGER, [t]))
        throw new DOMException(`getRandomValues: ${t} is not an integer array`, "TypeMismatchError");
      const n = apply(taLength, array, []);
      if (n > MAX_RANDOM_BYTES)
        // a DOMException named QuotaExceededError, as workerd and Node throw (and the pinned
        // WPT expects), not the newer Web IDL subclass: only e.constructor tells them apart
        throw new DOMException(`getRandomValues: ${n} bytes asked, at most ${MAX_RANDOM_BYTES} allowed`, "QuotaExceededError");
      randomFill(new U8(apply(taBuffer, array, []), apply(taOffset, array, []), n));
      return array;
    }
    randomUUID() {
      this.#subtle;
      const b = new U8(16);
      randomFill(b);
      b[6] = (b[6] & 0x0f) | 0x40;   // version 4
      b[8] = (b[8] & 0x3f) | 0x80;   // variant 10
      let s = "";
      for (let i = 0; i < 16; i++) {
        s += apply(padStart, apply(toString16, b[i], [16]), [2, "0"]);
        if (i === 3 || i === 5 || i === 7 || i === 9) s += "-";
      }
      return s;
    }
  }
  let crypto;
  making = true;
  try { crypto = new Crypto(); } finally { making = false; }
  idl(SubtleCrypto, "SubtleCrypto");
  idl(Crypto, "Crypto");
  dp(G, "crypto", { value: crypto, writable: true, configurable: true });
}
// crypto (W3C Web Cryptography API): getRandomValues (integer typed arrays only, at most
// 65,536 bytes) and randomUUID (version 4) read the run's ChaCha20 stream (web_crypto.c),
// keyed per run from the run record; crypto.subtle.digest hashes with SHA-1, SHA-256, SHA-384
// or SHA-512 and returns a promise of an ArrayBuffer. The rest of SubtleCrypto (keys, sign,
// encrypt, ...) is absent.
