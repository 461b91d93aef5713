(native) => {
  const S = native.streams, apply = Reflect.apply, G = globalThis;
  const { resolved, rejected, idl } = S;
  const TD = G.TextDecoder, TE = G.TextEncoder, U8 = Uint8Array, TypeErr = TypeError;
  const decode = TD.prototype.decode, encode = TE.prototype.encode;
  const gpd = (C, k) => Object.getOwnPropertyDescriptor(C.prototype, k).get;
  const tdFatal = gpd(TD, "fatal"), tdIgnoreBOM = gpd(TD, "ignoreBOM"), tdEncoding = gpd(TD, "encoding");
  const charCodeAt = String.prototype.charCodeAt, sliceS = String.prototype.slice;
  const STREAM = { __proto__: null, stream: true };
  // TransformStreamDefaultControllerEnqueue: the readable side gets the chunk and the
  // writable side feels its back pressure
  const enqueue = (t, chunk) => S.transformEnqueue(t, chunk);
  const attempt = (f) => {
    try {
      f();
      return resolved(undefined);
    } catch (e) {
      return rejected(e);
    }
  };

  // TextEncoderStream (WHATWG Encoding 10.2): a high surrogate ending one chunk waits for the
  // low surrogate starting the next; one left at the end is U+FFFD
  class TextEncoderStream {
    #t;
    constructor() {
      const encoder = new TE();
      let pending = "";
      const t = this.#t = S.createTransform((chunk) => attempt(() => {
        let s = pending + `${chunk}`;
        pending = "";
        if (s.length === 0) return;
        const last = apply(charCodeAt, s, [s.length - 1]);
        if (last >= 0xd800 && last <= 0xdbff) {
          pending = apply(sliceS, s, [-1]);
          s = apply(sliceS, s, [0, -1]);
        }
        if (s.length) enqueue(t, apply(encode, encoder, [s]));
      }), () => attempt(() => {
        if (pending) enqueue(t, new U8([0xef, 0xbf, 0xbd]));
      }));
    }
    get encoding() { this.#t; return "utf-8"; }
    get readable() { return this.#t.readable.api; }
    get writable() { return this.#t.writable.api; }
  }

  // TextDecoderStream (WHATWG Encoding 10.4) over a TextDecoder in streaming mode, so a
  // character split across chunks is decoded once both halves are in
  class TextDecoderStream {
    #t; #decoder;
    constructor(label = "utf-8", options = undefined) {
      const decoder = this.#decoder = new TD(label, options);
      const t = this.#t = S.createTransform((chunk) => attempt(() => {
        // the chunk is a BufferSource, which undefined (decode()'s "no input") is not
        if (chunk === undefined) throw new TypeErr("TextDecoderStream: the chunk is not a BufferSource");
        const text = apply(decode, decoder, [chunk, STREAM]);
        if (text.length) enqueue(t, text);
      }), () => attempt(() => {
        const text = apply(decode, decoder, []);
        if (text.length) enqueue(t, text);
      }));
    }
    get encoding() { return apply(tdEncoding, this.#decoder, []); }
    get fatal() { return apply(tdFatal, this.#decoder, []); }
    get ignoreBOM() { return apply(tdIgnoreBOM, this.#decoder, []); }
    get readable() { return this.#t.readable.api; }
    get writable() { return this.#t.writable.api; }
  }

  idl(TextEncoderStream, "TextEncoderStream");
  idl(TextDecoderStream, "TextDecoderStream");
}
// TextEncoderStream and TextDecoderStream, built on the TextEncoder and TextDecoder of
// encoding.js as they were at build time (their methods captured), over the platform's
// transform streams (streams_transform.js, looked up when a stream is made).
