(native) => {
  const S = native.streams, apply = Reflect.apply, TE = TypeError, RE = RangeError;
  const { resolved, resolvedWith, rejected, deferred, settle, fail, upon, follow, promiseCall,
    Queue, object, idl, INTERNAL, noop } = S;
  const AB = ArrayBuffer, U8 = Uint8Array, DV = DataView, TA = Object.getPrototypeOf(U8);
  const gpd = (C, k) => Object.getOwnPropertyDescriptor(C.prototype, k).get;
  const abLength = gpd(AB, "byteLength"), abDetached = gpd(AB, "detached");
  const abTransfer = AB.prototype.transfer, taSet = TA.prototype.set;
  const taTag = gpd(TA, Symbol.toStringTag), taBuffer = gpd(TA, "buffer");
  const taOffset = gpd(TA, "byteOffset"), taLength = gpd(TA, "byteLength"), taCount = gpd(TA, "length");
  const dvBuffer = gpd(DV, "buffer"), dvOffset = gpd(DV, "byteOffset"), dvLength = gpd(DV, "byteLength");
  const ctors = { __proto__: null };
  for (const C of [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array,
    Uint32Array, Float32Array, Float64Array, BigInt64Array, BigUint64Array, globalThis.Float16Array])
    if (C) ctors[C.name] = C;
  const isFinite = Number.isFinite, trunc = Math.trunc, min = Math.min;

  // an ArrayBufferView's parts, read through the captured getters; undefined if not a view
  function viewOf(v) {
    if (!object(v)) return undefined;
    const tag = apply(taTag, v, []);
    if (tag !== undefined) {
      const C = ctors[tag];
      return { __proto__: null, buffer: apply(taBuffer, v, []), byteOffset: apply(taOffset, v, []),
        byteLength: apply(taLength, v, []), elementSize: C.BYTES_PER_ELEMENT, ctor: C,
        length: apply(taCount, v, []) };
    }
    try {
      const buffer = apply(dvBuffer, v, []);
      return { __proto__: null, buffer, byteOffset: apply(dvOffset, v, []),
        byteLength: apply(dvLength, v, []), elementSize: 1, ctor: DV, length: undefined };
    } catch {
      return undefined;
    }
  }
  const bufLength = (b) => apply(abLength, b, []);
  const isDetached = (b) => apply(abDetached, b, []);
  const transfer = (b) => {
    if (isDetached(b)) throw new TE("The ArrayBuffer is detached");
    return apply(abTransfer, b, []);
  };
  const copyBytes = (dest, destStart, src, srcStart, n) =>
    apply(taSet, new U8(dest, destStart, n), [new U8(src, srcStart, n)]);
  const cloneBuffer = (b, offset, n) => { const out = new AB(n); copyBytes(out, 0, b, offset, n); return out; };
  // Web IDL [EnforceRange] unsigned long long
  function enforceRange(v, what) {
    const n = +v;
    if (!isFinite(n)) throw new TE(`${what} is not a finite number`);
    const t = trunc(n);
    if (t < 0 || t > Number.MAX_SAFE_INTEGER) throw new TE(`${what} is out of range`);
    return t;
  }

  let newByteController, newRequest, newBYOBReader, byobReaderOf;

  class ReadableByteStreamController {
    #c;
    constructor() {
      if (arguments[0] !== INTERNAL) throw new TE("Illegal constructor");
      this.#c = arguments[1];
      this.#c.api = this;
    }
    get byobRequest() { return getBYOBRequest(this.#c); }
    get desiredSize() { return desiredSize(this.#c); }
    close() {
      const c = this.#c;
      if (c.closeRequested) throw new TE("close: the stream is already closing");
      if (c.stream.state !== "readable") throw new TE("close: the stream is not readable");
      controllerClose(c);
    }
    enqueue(chunk) {
      const c = this.#c;
      if (arguments.length < 1) throw new TE("enqueue: 1 argument required");
      const v = viewOf(chunk);
      if (!v) throw new TE("enqueue: the chunk is not an ArrayBufferView");
      if (v.byteLength === 0) throw new TE("enqueue: the chunk is empty");
      if (bufLength(v.buffer) === 0) throw new TE("enqueue: the chunk's buffer is empty or detached");
      if (c.closeRequested) throw new TE("enqueue: the stream is closing");
      if (c.stream.state !== "readable") throw new TE("enqueue: the stream is not readable");
      controllerEnqueue(c, v);
    }
    error(e = undefined) { controllerError(this.#c, e); }
    static { newByteController = (c) => new ReadableByteStreamController(INTERNAL, c); }
  }

  class ReadableStreamBYOBRequest {
    #q;
    constructor() {
      if (arguments[0] !== INTERNAL) throw new TE("Illegal constructor");
      this.#q = arguments[1];
    }
    get view() { return this.#q.view; }
    respond(bytesWritten) {
      const q = this.#q;
      if (arguments.length < 1) throw new TE("respond: 1 argument required");
      const n = enforceRange(bytesWritten, "respond: bytesWritten");
      if (q.controller === undefined) throw new TE("respond: the request is no longer valid");
      if (isDetached(viewOf(q.view).buffer)) throw new TE("respond: the view's buffer is detached");
      respond(q.controller, n);
    }
    respondWithNewView(view) {
      const q = this.#q;
      if (arguments.length < 1) throw new TE("respondWithNewView: 1 argument required");
      const v = viewOf(view);
      if (!v) throw new TE("respondWithNewView: the view is not an ArrayBufferView");
      if (q.controller === undefined) throw new TE("respondWithNewView: the request is no longer valid");
      if (isDetached(v.buffer)) throw new TE("respondWithNewView: the view's buffer is detached");
      respondWithNewView(q.controller, v);
    }
    static { newRequest = (q) => new ReadableStreamBYOBRequest(INTERNAL, q); }
  }

  class ReadableStreamBYOBReader {
    #r;
    constructor(stream) {
      if (stream === INTERNAL) { this.#r = arguments[1]; this.#r.api = this; return; }
      if (arguments.length < 1) throw new TE("ReadableStreamBYOBReader: 1 argument required");
      const s = S.rsOf(stream);
      if (!s) throw new TE("ReadableStreamBYOBReader: the argument is not a ReadableStream");
      const r = this.#r = { __proto__: null, api: this, byob: true };
      setUpBYOBReader(r, s);
    }
    get closed() {
      const r = byobReaderOf(this);
      return r ? r.closed.p : rejected(new TE("closed: this is not a ReadableStreamBYOBReader"));
    }
    cancel(reason = undefined) {
      const r = byobReaderOf(this);
      if (!r) return rejected(new TE("cancel: this is not a ReadableStreamBYOBReader"));
      if (r.stream === undefined) return rejected(new TE("cancel: the reader is released"));
      return S.cancelStream(r.stream, reason);
    }
    read(view, options = undefined) {
      const r = byobReaderOf(this);
      if (!r) return rejected(new TE("read: this is not a ReadableStreamBYOBReader"));
      const v = viewOf(view);
      if (!v) return rejected(new TE("read: the view is not an ArrayBufferView"));
      let atLeast = 1;
      try {
        const o = S.dict(options, "read: options"), m = o === undefined ? undefined : o.min;
        if (m !== undefined) atLeast = enforceRange(m, "read: options.min");
      } catch (e) {
        return rejected(e);
      }
      if (v.byteLength === 0) return rejected(new TE("read: the view is empty"));
      if (bufLength(v.buffer) === 0) return rejected(new TE("read: the view's buffer is empty or detached"));
      if (isDetached(v.buffer)) return rejected(new TE("read: the view's buffer is detached"));
      if (atLeast === 0) return rejected(new TE("read: options.min is 0"));
      if (v.length !== undefined ? atLeast > v.length : atLeast > v.byteLength)
        return rejected(new RE("read: options.min is larger than the view"));
      if (r.stream === undefined) return rejected(new TE("read: the reader is released"));
      const d = deferred();
      byobRead(r, v, atLeast, {
        __proto__: null,
        chunk: (value) => settle(d, { value, done: false }),
        close: (value) => settle(d, { value, done: true }),
        error: (e) => fail(d, e),
      });
      return d.p;
    }
    releaseLock() {
      const r = this.#r;
      if (r.stream !== undefined) S.readerRelease(r);
    }
    static {
      byobReaderOf = (x) => (object(x) && #r in x ? x.#r : undefined);
      newBYOBReader = (r) => new ReadableStreamBYOBReader(INTERNAL, r);
    }
  }

  // ---- readers ----
  function setUpBYOBReader(r, s) {
    if (S.locked(s)) throw new TE("The ReadableStream is locked to a reader");
    if (!s.controller.bytes) throw new TE("A BYOB reader needs a byte stream (type: 'bytes')");
    S.readerInit(r, s);
    r.readIntoRequests = new Queue();
  }
  function acquireBYOBReader(s) {
    const r = { __proto__: null, api: undefined, byob: true };
    setUpBYOBReader(r, s);
    newBYOBReader(r);
    return r;
  }
  function byobRead(r, v, atLeast, req) {
    const s = r.stream;
    s.disturbed = true;
    if (s.state === "errored") req.error(s.storedError);
    else pullInto(s.controller, v, atLeast, req);
  }
  const hasDefaultReader = (s) => s.reader !== undefined && !s.reader.byob;
  const hasBYOBReader = (s) => s.reader !== undefined && s.reader.byob;
  function fulfillReadIntoRequest(s, chunk, done) {
    const req = s.reader.readIntoRequests.shift();
    if (done) req.close(chunk);
    else req.chunk(chunk);
  }

  // ---- the byte controller (Streams 4.11, 4.12) ----
  function setUpByteControllerFromSource(s, source, ds, hwm) {
    const start = ds.start, pull = ds.pull, cancel = ds.cancel;
    let chunkSize = ds.autoAllocateChunkSize;
    if (chunkSize !== undefined) {
      chunkSize = enforceRange(chunkSize, "autoAllocateChunkSize");
      if (chunkSize === 0) throw new TE("autoAllocateChunkSize must be greater than 0");
    }
    let c;
    setUpByteController(s,
      () => (start === undefined ? undefined : apply(start, source, [c.api])),
      () => promiseCall(pull, source, [c.api]),
      (reason) => promiseCall(cancel, source, [reason]),
      hwm, chunkSize, (x) => { c = x; });
  }

  function setUpByteController(s, start, pull, cancel, hwm, autoAllocateChunkSize, got = noop) {
    const c = {
      __proto__: null, api: undefined, bytes: true, stream: s, queue: new Queue(), queueTotalSize: 0,
      started: false, closeRequested: false, pullAgain: false, pulling: false, byobRequest: null,
      strategyHWM: hwm, pullAlgorithm: pull, cancelAlgorithm: cancel, autoAllocateChunkSize,
      pendingPullIntos: new Queue(),
      cancelSteps: (reason) => {
        clearPendingPullIntos(c);
        resetQueue(c);
        const result = c.cancelAlgorithm(reason);
        clearAlgorithms(c);
        return result;
      },
      pullSteps: (req) => {
        if (c.queueTotalSize > 0) { fillReadRequestFromQueue(c, req); return; }
        const size = c.autoAllocateChunkSize;
        if (size !== undefined) {
          let buffer;
          try {
            buffer = new AB(size);
          } catch (e) {
            req.error(e);
            return;
          }
          c.pendingPullIntos.push(descriptor(buffer, size, 0, size, 1, 1, U8, "default"));
        }
        s.reader.readRequests.push(req);
        callPullIfNeeded(c);
      },
      releaseSteps: () => {
        if (c.pendingPullIntos.length) {
          const first = c.pendingPullIntos.peek();
          first.readerType = "none";
          c.pendingPullIntos = new Queue();
          c.pendingPullIntos.push(first);
        }
      },
    };
    s.controller = c;
    newByteController(c);
    got(c);
    upon(resolvedWith(start()), () => {
      c.started = true;
      callPullIfNeeded(c);
    }, (r) => controllerError(c, r));
  }

  function descriptor(buffer, bufferByteLength, byteOffset, byteLength, minimumFill, elementSize, ctor, readerType) {
    return { __proto__: null, buffer, bufferByteLength, byteOffset, byteLength, bytesFilled: 0,
      minimumFill, elementSize, ctor, readerType };
  }
  function resetQueue(c) { c.queue = new Queue(); c.queueTotalSize = 0; }
  function clearAlgorithms(c) { c.pullAlgorithm = c.cancelAlgorithm = undefined; }
  function clearPendingPullIntos(c) { invalidateBYOBRequest(c); c.pendingPullIntos = new Queue(); }
  function invalidateBYOBRequest(c) {
    const q = c.byobRequest;
    if (q === null) return;
    q.controller = undefined;
    q.view = null;
    c.byobRequest = null;
  }
  function shouldCallPull(c) {
    const s = c.stream;
    if (s.state !== "readable" || c.closeRequested || !c.started) return false;
    if (hasDefaultReader(s) && s.reader.readRequests.length > 0) return true;
    if (hasBYOBReader(s) && s.reader.readIntoRequests.length > 0) return true;
    return desiredSize(c) > 0;
  }
  function callPullIfNeeded(c) {
    if (!shouldCallPull(c)) return;
    if (c.pulling) { c.pullAgain = true; return; }
    c.pulling = true;
    upon(c.pullAlgorithm(), () => {
      c.pulling = false;
      if (c.pullAgain) {
        c.pullAgain = false;
        callPullIfNeeded(c);
      }
    }, (e) => controllerError(c, e));
  }
  function desiredSize(c) {
    const state = c.stream.state;
    if (state === "errored") return null;
    if (state === "closed") return 0;
    return c.strategyHWM - c.queueTotalSize;
  }
  function controllerError(c, e) {
    const s = c.stream;
    if (s.state !== "readable") return;
    clearPendingPullIntos(c);
    resetQueue(c);
    clearAlgorithms(c);
    S.errorStream(s, e);
  }
  function controllerClose(c) {
    const s = c.stream;
    if (c.closeRequested || s.state !== "readable") return;
    if (c.queueTotalSize > 0) { c.closeRequested = true; return; }
    if (c.pendingPullIntos.length) {
      const first = c.pendingPullIntos.peek();
      if (first.bytesFilled % first.elementSize !== 0) {
        const e = new TE("The stream closed with a partial element in its view");
        controllerError(c, e);
        throw e;
      }
    }
    clearAlgorithms(c);
    S.closeStream(s);
  }
  function enqueueChunk(c, buffer, byteOffset, byteLength) {
    c.queue.push({ __proto__: null, buffer, byteOffset, byteLength });
    c.queueTotalSize += byteLength;
  }
  function enqueueClonedChunk(c, buffer, byteOffset, byteLength) {
    let clone;
    try {
      clone = cloneBuffer(buffer, byteOffset, byteLength);
    } catch (e) {
      controllerError(c, e);
      throw e;
    }
    enqueueChunk(c, clone, 0, byteLength);
  }
  function enqueueDetachedPullInto(c, d) {
    if (d.bytesFilled > 0) enqueueClonedChunk(c, d.buffer, d.byteOffset, d.bytesFilled);
    shiftPendingPullInto(c);
  }
  const shiftPendingPullInto = (c) => c.pendingPullIntos.shift();

  function controllerEnqueue(c, v) {
    const s = c.stream;
    if (c.closeRequested || s.state !== "readable") return;
    const { buffer, byteOffset, byteLength } = v;
    if (isDetached(buffer)) throw new TE("enqueue: the chunk's buffer is detached");
    const transferred = transfer(buffer);
    if (c.pendingPullIntos.length) {
      const first = c.pendingPullIntos.peek();
      if (isDetached(first.buffer)) throw new TE("enqueue: the BYOB request's buffer is detached");
      invalidateBYOBRequest(c);
      first.buffer = transfer(first.buffer);
      if (first.readerType === "none") enqueueDetachedPullInto(c, first);
    }
    if (hasDefaultReader(s)) {
      processReadRequestsUsingQueue(c);
      if (s.reader.readRequests.length === 0) enqueueChunk(c, transferred, byteOffset, byteLength);
      else {
        if (c.pendingPullIntos.length) shiftPendingPullInto(c);
        S.fulfillReadRequest(s, new U8(transferred, byteOffset, byteLength), false);
      }
    } else if (hasBYOBReader(s)) {
      enqueueChunk(c, transferred, byteOffset, byteLength);
      commitAll(s, processPullIntosUsingQueue(c));
    } else enqueueChunk(c, transferred, byteOffset, byteLength);
    callPullIfNeeded(c);
  }

  function commitAll(s, filled) {
    for (let i = 0; i < filled.length; i++) commitPullInto(s, filled[i]);
  }
  function commitPullInto(s, d) {
    const done = s.state === "closed";
    const view = convertPullInto(d);
    if (d.readerType === "default") S.fulfillReadRequest(s, view, done);
    else fulfillReadIntoRequest(s, view, done);
  }
  function convertPullInto(d) {
    return new d.ctor(transfer(d.buffer), d.byteOffset, d.bytesFilled / d.elementSize);
  }

  function fillPullIntoFromQueue(c, d) {
    const maxBytesToCopy = min(c.queueTotalSize, d.byteLength - d.bytesFilled);
    const maxBytesFilled = d.bytesFilled + maxBytesToCopy;
    let remaining = maxBytesToCopy, ready = false;
    const maxAlignedBytes = maxBytesFilled - (maxBytesFilled % d.elementSize);
    if (maxAlignedBytes >= d.minimumFill) {
      remaining = maxAlignedBytes - d.bytesFilled;
      ready = true;
    }
    const queue = c.queue;
    while (remaining > 0) {
      const head = queue.peek(), n = min(remaining, head.byteLength);
      copyBytes(d.buffer, d.byteOffset + d.bytesFilled, head.buffer, head.byteOffset, n);
      if (head.byteLength === n) queue.shift();
      else {
        head.byteOffset += n;
        head.byteLength -= n;
      }
      c.queueTotalSize -= n;
      d.bytesFilled += n;
      remaining -= n;
    }
    return ready;
  }
  function processPullIntosUsingQueue(c) {
    const filled = [];
    while (c.pendingPullIntos.length) {
      if (c.queueTotalSize === 0) break;
      const d = c.pendingPullIntos.peek();
      if (fillPullIntoFromQueue(c, d)) {
        shiftPendingPullInto(c);
        filled[filled.length] = d;
      }
    }
    return filled;
  }
  function processReadRequestsUsingQueue(c) {
    const r = c.stream.reader;
    while (r.readRequests.length) {
      if (c.queueTotalSize === 0) return;
      fillReadRequestFromQueue(c, r.readRequests.shift());
    }
  }
  function fillReadRequestFromQueue(c, req) {
    const entry = c.queue.shift();
    c.queueTotalSize -= entry.byteLength;
    handleQueueDrain(c);
    req.chunk(new U8(entry.buffer, entry.byteOffset, entry.byteLength));
  }
  function handleQueueDrain(c) {
    if (c.queueTotalSize === 0 && c.closeRequested) {
      clearAlgorithms(c);
      S.closeStream(c.stream);
    } else callPullIfNeeded(c);
  }
  function getBYOBRequest(c) {
    if (c.byobRequest === null && c.pendingPullIntos.length) {
      const d = c.pendingPullIntos.peek();
      const q = { __proto__: null, controller: c, api: undefined,
        view: new U8(d.buffer, d.byteOffset + d.bytesFilled, d.byteLength - d.bytesFilled) };
      q.api = newRequest(q);
      c.byobRequest = q;
    }
    return c.byobRequest === null ? null : c.byobRequest.api;
  }

  function pullInto(c, v, atLeast, req) {
    const s = c.stream;
    let buffer;
    try {
      buffer = transfer(v.buffer);
    } catch (e) {
      req.error(e);
      return;
    }
    const d = descriptor(buffer, bufLength(buffer), v.byteOffset, v.byteLength,
      atLeast * v.elementSize, v.elementSize, v.ctor, "byob");
    if (c.pendingPullIntos.length) {
      c.pendingPullIntos.push(d);
      s.reader.readIntoRequests.push(req);
      return;
    }
    if (s.state === "closed") {
      req.close(new d.ctor(d.buffer, d.byteOffset, 0));
      return;
    }
    if (c.queueTotalSize > 0) {
      if (fillPullIntoFromQueue(c, d)) {
        const view = convertPullInto(d);
        handleQueueDrain(c);
        req.chunk(view);
        return;
      }
      if (c.closeRequested) {
        const e = new TE("The stream is closing with too few bytes for the view");
        controllerError(c, e);
        req.error(e);
        return;
      }
    }
    c.pendingPullIntos.push(d);
    s.reader.readIntoRequests.push(req);
    callPullIfNeeded(c);
  }

  function respond(c, bytesWritten) {
    const first = c.pendingPullIntos.peek(), state = c.stream.state;
    if (state === "closed") {
      if (bytesWritten !== 0) throw new TE("respond: bytesWritten must be 0 for a closed stream");
    } else {
      if (bytesWritten === 0) throw new TE("respond: bytesWritten must be greater than 0");
      if (first.bytesFilled + bytesWritten > first.byteLength)
        throw new RE("respond: bytesWritten is larger than the view");
    }
    first.buffer = transfer(first.buffer);
    respondInternal(c, bytesWritten);
  }
  function respondWithNewView(c, v) {
    const first = c.pendingPullIntos.peek(), state = c.stream.state;
    if (state === "closed") {
      if (v.byteLength !== 0) throw new TE("respondWithNewView: the view must be empty for a closed stream");
    } else if (v.byteLength === 0) throw new TE("respondWithNewView: the view is empty");
    if (first.byteOffset + first.bytesFilled !== v.byteOffset)
      throw new RE("respondWithNewView: the view's offset does not match the request's");
    if (first.bufferByteLength !== bufLength(v.buffer))
      throw new RE("respondWithNewView: the view's buffer length does not match the request's");
    if (first.bytesFilled + v.byteLength > first.byteLength)
      throw new RE("respondWithNewView: the view is larger than the request's");
    const n = v.byteLength;
    first.buffer = transfer(v.buffer);
    respondInternal(c, n);
  }
  function respondInternal(c, bytesWritten) {
    const first = c.pendingPullIntos.peek();
    invalidateBYOBRequest(c);
    if (c.stream.state === "closed") respondInClosedState(c, first);
    else respondInReadableState(c, bytesWritten, first);
    callPullIfNeeded(c);
  }
  function respondInClosedState(c, first) {
    if (first.readerType === "none") shiftPendingPullInto(c);
    const s = c.stream;
    if (hasBYOBReader(s)) {
      const filled = [];
      while (filled.length < s.reader.readIntoRequests.length) filled[filled.length] = shiftPendingPullInto(c);
      commitAll(s, filled);
    }
  }
  function respondInReadableState(c, bytesWritten, d) {
    d.bytesFilled += bytesWritten;
    if (d.readerType === "none") {
      enqueueDetachedPullInto(c, d);
      commitAll(c.stream, processPullIntosUsingQueue(c));
      return;
    }
    if (d.bytesFilled < d.minimumFill) return;
    shiftPendingPullInto(c);
    const remainder = d.bytesFilled % d.elementSize;
    if (remainder > 0) {
      const end = d.byteOffset + d.bytesFilled;
      enqueueClonedChunk(c, d.buffer, end - remainder, remainder);
    }
    d.bytesFilled -= remainder;
    const filled = processPullIntosUsingQueue(c);
    commitPullInto(c.stream, d);
    commitAll(c.stream, filled);
  }

  function createByteStream(start, pull, cancel) {
    const s = S.initStream(undefined);
    S.newStream(s);
    setUpByteController(s, start, pull, cancel, 0, undefined);
    return s;
  }

  idl(ReadableByteStreamController, "ReadableByteStreamController");
  idl(ReadableStreamBYOBRequest, "ReadableStreamBYOBRequest");
  idl(ReadableStreamBYOBReader, "ReadableStreamBYOBReader");

  Object.assign(S, { setUpByteControllerFromSource, acquireBYOBReader });
  // for the byte tee (streams_tee.js)
  S.bytes = {
    __proto__: null, controllerError, controllerEnqueue, controllerClose, respond,
    respondWithNewView, getBYOBRequest, byobRead, createByteStream, viewOf, cloneBuffer,
  };
}
// Byte streams (WHATWG Streams 4.3-4.12): ReadableByteStreamController, ReadableStreamBYOBReader
// and ReadableStreamBYOBRequest, the byte tee, and BYOB reads with { min }. Buffers handed to
// a stream are transferred (ArrayBuffer.prototype.transfer, captured), as the spec does.
// streams_readable.js calls in through native.streams when a stream has type "bytes".
