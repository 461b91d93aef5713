(native) => {
  const G = globalThis, apply = Reflect.apply, TypeErr = TypeError;
  const { defineProperty: dp, getOwnPropertyDescriptor: gopd } = Object;
  const { zlibNew, zlibWrite, zlibStep, zlibEnd, bytesOf } = native;
  const abLength = gopd(ArrayBuffer.prototype, "byteLength").get;
  const taBuffer = gopd(Object.getPrototypeOf(Uint8Array).prototype, "buffer").get;
  const FORMATS = { __proto__: null, deflate: 0, "deflate-raw": 1, gzip: 2 };
  const isArrayBuffer = (b) => {
    try {
      apply(abLength, b, []);
      return true;
    } catch {
      return false;
    }
  };
  // a BufferSource (an ArrayBuffer or a view of one, never shared memory) as a Uint8Array over
  // its bytes; zlibWrite copies them before any program code runs again
  const bufferSource = (chunk, who) => {
    const view = bytesOf(chunk);
    if (view === null || !isArrayBuffer(apply(taBuffer, view, [])))
      throw new TypeErr(`${who}: the chunk is not an ArrayBuffer or an ArrayBufferView`);
    return view;
  };

  // One zlib stream (web_compress.c) behind a transform stream, as the Compression Standard's
  // "compress and enqueue" / "decompress and flush", with the pieces (at most 64 KiB each)
  // enqueued as the reader takes them: once the readable side is full the transform waits for
  // the next read (the transform's back pressure) before it enqueues another, so a small
  // input that inflates to gigabytes holds a piece or two at a time, not all of them. An error
  // frees zlib's memory at once; a stream dropped unfinished has it freed by the collector
  // (the handle's finalizer).
  function transform(inflate, format, who) {
    const f = `${format}`;
    const id = FORMATS[f];
    if (id === undefined)
      throw new TypeErr(`${who}: "${f}" is not a supported format (deflate, deflate-raw, gzip)`);
    const S = native.streams; // streams_*.js sort after this file: looked up when used
    const h = zlibNew(inflate, id);
    const fail = (e) => {
      zlibEnd(h);
      return S.rejected(e);
    };
    // enqueue the output so far; wait for a read only when there is more (`next`, the one
    // piece held meanwhile), so a write whose output is one piece settles at once, as the
    // standard has it
    const pump = (t, finish, next) => {
      try {
        let piece = next === undefined ? zlibStep(h, finish) : next;
        while (piece !== null) {
          S.transformEnqueue(t, piece);
          piece = zlibStep(h, finish);
          if (piece !== null && t.backpressure) {
            const held = piece;
            return S.chain(t.backpressureChange.p, () => pump(t, finish, held), fail);
          }
        }
        return S.resolved(undefined);
      } catch (e) {
        return fail(e);
      }
    };
    const write = (t, chunk) => {
      try {
        zlibWrite(h, bufferSource(chunk, who));
      } catch (e) {
        return fail(e);
      }
      return pump(t, false, undefined);
    };
    const t = S.createTransform((chunk) => write(t, chunk), () => pump(t, true, undefined));
    return t;
  }

  class CompressionStream {
    #t;
    constructor(format) { this.#t = transform(false, format, "CompressionStream"); }
    get readable() { return this.#t.readable.api; }
    get writable() { return this.#t.writable.api; }
  }
  class DecompressionStream {
    #t;
    constructor(format) { this.#t = transform(true, format, "DecompressionStream"); }
    get readable() { return this.#t.readable.api; }
    get writable() { return this.#t.writable.api; }
  }

  // Web IDL: attributes are enumerable, the class string is the interface's, the global is
  // writable and configurable but not enumerable
  for (const C of [CompressionStream, DecompressionStream]) {
    for (const k of ["readable", "writable"])
      dp(C.prototype, k, { ...gopd(C.prototype, k), enumerable: true });
    dp(C.prototype, Symbol.toStringTag, { value: C.name, configurable: true });
    dp(G, C.name, { value: C, writable: true, configurable: true });
  }
}
// CompressionStream and DecompressionStream (WHATWG Compression: "deflate", "deflate-raw",
// "gzip"), zlib's deflate and inflate in C (../web_compress.c, compiled from the pinned zlib)
// behind the platform's transform streams (streams_transform.js, looked up when a stream is
// made). Chunks are BufferSources; a DecompressionStream errors with a TypeError on corrupt
// input, on data after the compressed stream's end, and on an input that ends too early.
