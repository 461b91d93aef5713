// TextEncoder (UTF-8, the one encoding it has) and TextDecoder (every encoding of WHATWG
// Encoding: UTF-8 here and in web_encoding.c, the others and the labels in
// web_encoding_legacy.c), and the argument checks of atob/btoa, whose work is QuickJS-ng's own
// (JS_AddIntrinsicAToB, the HTML forgiving-base64 rules).
(native) => {
  const { utf8Decode, utf8Encode, utf8EncodeInto, encodingFind, decoderState, legacyDecode } = native;
  const { defineProperty, getOwnPropertyDescriptor: gopd } = Object;
  const getter = (C, name) => gopd(C.prototype, name).get;
  const abLength = getter(ArrayBuffer, "byteLength");
  const abDetached = getter(ArrayBuffer, "detached");
  const SAB = globalThis.SharedArrayBuffer;
  const sabLength = SAB && getter(SAB, "byteLength");
  const TypedArray = Object.getPrototypeOf(Uint8Array);
  const taBuffer = getter(TypedArray, "buffer");
  const taOffset = getter(TypedArray, "byteOffset");
  const taLength = getter(TypedArray, "byteLength");
  const taTag = getter(TypedArray, Symbol.toStringTag);
  const dvBuffer = getter(DataView, "buffer");
  const dvOffset = getter(DataView, "byteOffset");
  const dvLength = getter(DataView, "byteLength");
  const U8 = Uint8Array;
  // captured, so that TextDecoderStream (streams_text.js) survives a program replacing them
  const apply = Reflect.apply, uncurry = (f) => (self, ...args) => apply(f, self, args);
  const includes = uncurry(Array.prototype.includes), set = uncurry(TypedArray.prototype.set);
  const slice = uncurry(TypedArray.prototype.slice), charCodeAt = uncurry(String.prototype.charCodeAt);
  const sliceS = uncurry(String.prototype.slice);
  const call = (f, x) => {
    try {
      return [apply(f, x, [])];
    } catch {
      return null;
    }
  };
  const isBuffer = (x) => call(abLength, x) || (sabLength && call(sabLength, x));
  const detached = (b) => call(abLength, b) !== null && apply(abDetached, b, []);
  // The bytes of an AllowSharedBufferSource, as a Uint8Array over the same memory.
  const bytesOf = (x) => {
    if (x === undefined) return new U8(0);
    if (x !== null && (typeof x === "object" || typeof x === "function")) {
      if (isBuffer(x)) return detached(x) ? new U8(0) : new U8(x);
      const tag = call(taTag, x);
      const view = tag && tag[0] ? [taBuffer, taOffset, taLength]
        : call(dvBuffer, x) ? [dvBuffer, dvOffset, dvLength] : null;
      if (view) {
        const b = apply(view[0], x, []);
        return detached(b) ? new U8(0) : new U8(b, apply(view[1], x, []), apply(view[2], x, []));
      }
    }
    throw new TypeError("The provided value is not an ArrayBuffer, a SharedArrayBuffer or an ArrayBufferView");
  };
  // the encodings whose decoder's BOM is the Standard's to strip (UTF-8 is id 0)
  const bomNames = ["utf-8", "utf-16be", "utf-16le"];
  const def = (name, value) => defineProperty(globalThis, name, { value, writable: true, configurable: true });
  const tag = (C) => defineProperty(C.prototype, Symbol.toStringTag, { value: C.name, configurable: true });

  class TextEncoder {
    get encoding() {
      return "utf-8";
    }
    encode(input = "") {
      return utf8Encode(`${input}`);
    }
    encodeInto(source, destination) {
      if (call(taTag, destination)?.[0] !== "Uint8Array") throw new TypeError("encodeInto: destination is not a Uint8Array");
      const s = `${source}`;
      if (detached(apply(taBuffer, destination, []))) return { read: 0, written: 0 };
      const done = utf8EncodeInto(s, destination);
      return { read: done[0], written: done[1] };
    }
  }

  class TextDecoder {
    #fatal;
    #ignoreBOM;
    #id;
    #name;
    #state = null; // a legacy decoder's state (web_encoding_legacy.c), made at the first decode
    #pending = new U8(0);
    #bomSeen = false;
    #flush = true;
    constructor(label = "utf-8", options = {}) {
      label = `${label}`;
      // Web IDL converts the options dictionary before the constructor's steps look the label up
      if (options !== undefined && options !== null && typeof options !== "object" && typeof options !== "function") {
        throw new TypeError("TextDecoder: options is not an object");
      }
      this.#fatal = !!options?.fatal;
      this.#ignoreBOM = !!options?.ignoreBOM;
      const found = encodingFind(label);
      if (found === null || found[1] === "replacement") {
        throw new RangeError(`The encoding label provided ('${label}') is invalid.`);
      }
      this.#id = found[0];
      this.#name = found[1];
    }
    get encoding() {
      return this.#name;
    }
    get fatal() {
      return this.#fatal;
    }
    get ignoreBOM() {
      return this.#ignoreBOM;
    }
    decode(input = undefined, options = {}) {
      let bytes = bytesOf(input);
      const stream = !!options?.stream;
      let text;
      if (this.#id !== 0) {
        if (this.#flush) {
          this.#state = decoderState(this.#id);
          this.#bomSeen = false;
        }
        this.#flush = true; // until it returns: a throw (out of memory) leaves no half-used state
        text = legacyDecode(this.#state, bytes, this.#fatal, !stream);
        this.#flush = !stream;
      } else {
        if (this.#flush) {
          this.#pending = new U8(0);
          this.#bomSeen = false;
        }
        this.#flush = !stream;
        if (this.#pending.length) {
          const joined = new U8(this.#pending.length + bytes.length);
          set(joined, this.#pending);
          set(joined, bytes, this.#pending.length);
          bytes = joined;
        }
        const decoded = utf8Decode(bytes, this.#fatal, stream), used = decoded[1];
        text = decoded[0];
        this.#pending = used < bytes.length ? slice(bytes, used) : new U8(0);
      }
      if (text === null) {
        this.#pending = new U8(0);
        this.#flush = true;
        throw new TypeError(`The encoded data was not valid ${this.#name}`);
      }
      if (this.#bomSeen || !text.length || !includes(bomNames, this.#name)) return text;
      this.#bomSeen = true;
      return !this.#ignoreBOM && charCodeAt(text, 0) === 0xfeff ? sliceS(text, 1) : text;
    }
  }

  tag(TextEncoder);
  tag(TextDecoder);
  def("TextEncoder", TextEncoder);
  def("TextDecoder", TextDecoder);

  // atob() and btoa() with no argument are TypeErrors (Web IDL), not atob("undefined")
  for (const name of ["atob", "btoa"]) {
    const f = globalThis[name];
    const w = { [name](data) {
      if (arguments.length < 1) throw new TypeError(`${name}: 1 argument required, but only 0 present.`);
      return f(data);
    } }[name];
    def(name, w);
  }
};
