(native) => {
  const S = native.streams, apply = Reflect.apply, TE = TypeError, RE = RangeError;
  const { resolved, resolvedWith, rejected, markHandled, deferred, settle, fail, settled, failed, upon,
    promiseCall, enqueueValueWithSize, dequeueValue, peekQueueValue, resetQueue, object, dict,
    callback, strategy, extractHighWaterMark, extractSizeAlgorithm, idl, INTERNAL, Queue } = S;
  const AC = globalThis.AbortController;
  const acSignal = Object.getOwnPropertyDescriptor(AC.prototype, "signal").get;
  const CLOSE = { __proto__: null };   // the close sentinel in a controller's queue

  let wsOf, writerOf, newStream, newWriter, newController;

  class WritableStream {
    #s;
    constructor(underlyingSink = undefined, strategyInit = undefined) {
      if (underlyingSink === INTERNAL) { this.#s = strategyInit; strategyInit.api = this; return; }
      if (underlyingSink === null) throw new TE("WritableStream: underlyingSink is not an object");
      const st = strategy(strategyInit, "WritableStream: strategy");
      const sink = dict(underlyingSink, "WritableStream: underlyingSink");
      const ds = sink === undefined ? undefined : {
        __proto__: null,
        abort: callback(sink, "abort", "underlyingSink"),
        close: callback(sink, "close", "underlyingSink"),
        start: callback(sink, "start", "underlyingSink"),
        type: sink.type,
        write: callback(sink, "write", "underlyingSink"),
      };
      if (ds !== undefined && ds.type !== undefined) throw new RE("WritableStream: invalid type");
      const s = this.#s = initStream(this);
      const size = extractSizeAlgorithm(st), hwm = extractHighWaterMark(st, 1);
      setUpControllerFromSink(s, underlyingSink, ds, hwm, size);
    }
    get locked() { return this.#s.writer !== undefined; }
    abort(reason = undefined) {
      const s = wsOf(this);
      if (!s) return rejected(new TE("abort: this is not a WritableStream"));
      if (s.writer !== undefined) return rejected(new TE("The WritableStream is locked"));
      return abortStream(s, reason);
    }
    close() {
      const s = wsOf(this);
      if (!s) return rejected(new TE("close: this is not a WritableStream"));
      if (s.writer !== undefined) return rejected(new TE("The WritableStream is locked"));
      if (closeQueuedOrInFlight(s)) return rejected(new TE("The WritableStream is closed or closing"));
      return closeStream(s);
    }
    getWriter() { return acquireWriter(this.#s).api; }
    static {
      wsOf = (x) => (object(x) && #s in x ? x.#s : undefined);
      newStream = (s) => new WritableStream(INTERNAL, s);
    }
  }

  class WritableStreamDefaultWriter {
    #w;
    constructor(stream) {
      if (stream === INTERNAL) { this.#w = arguments[1]; this.#w.api = this; return; }
      if (arguments.length < 1) throw new TE("WritableStreamDefaultWriter: 1 argument required");
      const s = wsOf(stream);
      if (!s) throw new TE("WritableStreamDefaultWriter: the argument is not a WritableStream");
      const w = this.#w = { __proto__: null, api: this };
      setUpWriter(w, s);
    }
    get closed() {
      const w = writerOf(this);
      return w ? w.closed.p : rejected(new TE("closed: this is not a WritableStreamDefaultWriter"));
    }
    get desiredSize() {
      const w = this.#w;
      if (w.stream === undefined) throw new TE("desiredSize: the writer is released");
      return writerDesiredSize(w);
    }
    get ready() {
      const w = writerOf(this);
      return w ? w.ready.p : rejected(new TE("ready: this is not a WritableStreamDefaultWriter"));
    }
    abort(reason = undefined) {
      const w = writerOf(this);
      if (!w) return rejected(new TE("abort: this is not a WritableStreamDefaultWriter"));
      if (w.stream === undefined) return rejected(new TE("abort: the writer is released"));
      return abortStream(w.stream, reason);
    }
    close() {
      const w = writerOf(this);
      if (!w) return rejected(new TE("close: this is not a WritableStreamDefaultWriter"));
      const s = w.stream;
      if (s === undefined) return rejected(new TE("close: the writer is released"));
      if (closeQueuedOrInFlight(s)) return rejected(new TE("The WritableStream is closed or closing"));
      return closeStream(s);
    }
    releaseLock() {
      const w = this.#w;
      if (w.stream !== undefined) writerRelease(w);
    }
    write(chunk = undefined) {
      const w = writerOf(this);
      if (!w) return rejected(new TE("write: this is not a WritableStreamDefaultWriter"));
      if (w.stream === undefined) return rejected(new TE("write: the writer is released"));
      return writerWrite(w, chunk);
    }
    static {
      writerOf = (x) => (object(x) && #w in x ? x.#w : undefined);
      newWriter = (w) => new WritableStreamDefaultWriter(INTERNAL, w);
    }
  }

  class WritableStreamDefaultController {
    #c;
    constructor() {
      if (arguments[0] !== INTERNAL) throw new TE("Illegal constructor");
      this.#c = arguments[1];
      this.#c.api = this;
    }
    get signal() { return this.#c.signal; }
    error(e = undefined) {
      const c = this.#c;
      if (c.stream.state !== "writable") return;
      controllerError(c, e);
    }
    static { newController = (c) => new WritableStreamDefaultController(INTERNAL, c); }
  }

  // ---- the stream's abstract operations (Streams 5.5) ----
  function initStream(api) {
    return {
      __proto__: null, api, state: "writable", storedError: undefined, writer: undefined,
      controller: undefined, inFlightWriteRequest: undefined, closeRequest: undefined,
      inFlightCloseRequest: undefined, pendingAbortRequest: undefined, writeRequests: new Queue(),
      backpressure: false,
    };
  }

  function createStream(start, write, close, abort, hwm, size) {
    const s = initStream(undefined);
    newStream(s);
    setUpController(s, start, write, close, abort, hwm, size);
    return s;
  }

  function abortStream(s, reason) {
    if (s.state === "closed" || s.state === "errored") return resolved(undefined);
    native.signalAbort(s.controller.signal, reason);
    const state = s.state;
    if (state === "closed" || state === "errored") return resolved(undefined);
    if (s.pendingAbortRequest !== undefined) return s.pendingAbortRequest.d.p;
    let wasAlreadyErroring = false;
    if (state === "erroring") {
      wasAlreadyErroring = true;
      reason = undefined;
    }
    const d = deferred();
    s.pendingAbortRequest = { __proto__: null, d, reason, wasAlreadyErroring };
    if (!wasAlreadyErroring) startErroring(s, reason);
    return d.p;
  }

  function closeStream(s) {
    const state = s.state;
    if (state === "closed" || state === "errored")
      return rejected(new TE("The WritableStream is closed or errored"));
    const d = deferred();
    s.closeRequest = d;
    const w = s.writer;
    if (w !== undefined && s.backpressure && state === "writable") settle(w.ready, undefined);
    enqueueValueWithSize(s.controller, CLOSE, 0);
    advanceQueueIfNeeded(s.controller);
    return d.p;
  }

  const closeQueuedOrInFlight = (s) => s.closeRequest !== undefined || s.inFlightCloseRequest !== undefined;
  const operationInFlight = (s) => s.inFlightWriteRequest !== undefined || s.inFlightCloseRequest !== undefined;

  function dealWithRejection(s, error) {
    if (s.state === "writable") startErroring(s, error);
    else finishErroring(s);
  }

  function startErroring(s, reason) {
    const c = s.controller;
    s.state = "erroring";
    s.storedError = reason;
    if (s.writer !== undefined) ensureRejected(s.writer, "ready", reason);
    if (!operationInFlight(s) && c.started) finishErroring(s);
  }

  function finishErroring(s) {
    s.state = "errored";
    resetQueue(s.controller);
    const e = s.storedError;
    const requests = s.writeRequests;
    s.writeRequests = new Queue();
    while (requests.length) fail(requests.shift(), e);
    const abort = s.pendingAbortRequest;
    if (abort === undefined) { rejectCloseAndClosed(s); return; }
    s.pendingAbortRequest = undefined;
    if (abort.wasAlreadyErroring) {
      fail(abort.d, e);
      rejectCloseAndClosed(s);
      return;
    }
    const c = s.controller, p = c.abortAlgorithm(abort.reason);
    clearAlgorithms(c);
    upon(p, () => {
      settle(abort.d, undefined);
      rejectCloseAndClosed(s);
    }, (r) => {
      fail(abort.d, r);
      rejectCloseAndClosed(s);
    });
  }

  function finishInFlightClose(s) {
    settle(s.inFlightCloseRequest, undefined);
    s.inFlightCloseRequest = undefined;
    if (s.state === "erroring") {
      s.storedError = undefined;
      if (s.pendingAbortRequest !== undefined) {
        settle(s.pendingAbortRequest.d, undefined);
        s.pendingAbortRequest = undefined;
      }
    }
    s.state = "closed";
    if (s.writer !== undefined) settle(s.writer.closed, undefined);
  }

  function finishInFlightCloseWithError(s, error) {
    fail(s.inFlightCloseRequest, error);
    s.inFlightCloseRequest = undefined;
    if (s.pendingAbortRequest !== undefined) {
      fail(s.pendingAbortRequest.d, error);
      s.pendingAbortRequest = undefined;
    }
    dealWithRejection(s, error);
  }

  function rejectCloseAndClosed(s) {
    if (s.closeRequest !== undefined) {
      fail(s.closeRequest, s.storedError);
      s.closeRequest = undefined;
    }
    const w = s.writer;
    if (w !== undefined) {
      fail(w.closed, s.storedError);
      markHandled(w.closed.p);
    }
  }

  function updateBackpressure(s, backpressure) {
    const w = s.writer;
    if (w !== undefined && backpressure !== s.backpressure) {
      if (backpressure) w.ready = deferred();
      else settle(w.ready, undefined);
    }
    s.backpressure = backpressure;
  }

  // ---- writers ----
  function acquireWriter(s) {
    const w = { __proto__: null, api: undefined };
    setUpWriter(w, s);
    newWriter(w);
    return w;
  }
  function setUpWriter(w, s) {
    if (s.writer !== undefined) throw new TE("The WritableStream is locked to a writer");
    w.stream = s;
    s.writer = w;
    const state = s.state;
    if (state === "writable") {
      w.ready = !closeQueuedOrInFlight(s) && s.backpressure ? deferred() : settled(undefined);
      w.closed = deferred();
    } else if (state === "erroring") {
      w.ready = failed(s.storedError);
      w.closed = deferred();
    } else if (state === "closed") {
      w.ready = settled(undefined);
      w.closed = settled(undefined);
    } else {
      w.ready = failed(s.storedError);
      w.closed = failed(s.storedError);
    }
  }
  // WritableStreamDefaultWriterEnsure{Closed,Ready}PromiseRejected
  function ensureRejected(w, slot, error) {
    if (w[slot].pending) fail(w[slot], error);
    else w[slot] = failed(error);
    markHandled(w[slot].p);
  }
  function writerDesiredSize(w) {
    const s = w.stream, state = s.state;
    if (state === "errored" || state === "erroring") return null;
    if (state === "closed") return 0;
    return s.controller.strategyHWM - s.controller.queueTotalSize;
  }
  function writerRelease(w) {
    const e = new TE("The writer was released");
    ensureRejected(w, "ready", e);
    ensureRejected(w, "closed", e);
    w.stream.writer = undefined;
    w.stream = undefined;
  }
  function writerCloseWithErrorPropagation(w) {
    const s = w.stream, state = s.state;
    if (closeQueuedOrInFlight(s) || state === "closed") return resolved(undefined);
    if (state === "errored") return rejected(s.storedError);
    return closeStream(s);
  }
  function writerWrite(w, chunk) {
    const s = w.stream, c = s.controller;
    const chunkSize = chunkSizeOf(c, chunk);
    if (s !== w.stream) return rejected(new TE("The writer was released"));
    const state = s.state;
    if (state === "errored") return rejected(s.storedError);
    if (closeQueuedOrInFlight(s) || state === "closed")
      return rejected(new TE("The WritableStream is closed or closing"));
    if (state === "erroring") return rejected(s.storedError);
    const d = deferred();
    s.writeRequests.push(d);
    try {
      enqueueValueWithSize(c, chunk, chunkSize);
    } catch (e) {
      if (s.state === "writable") controllerError(c, e);
      return d.p;
    }
    if (!closeQueuedOrInFlight(s) && s.state === "writable") updateBackpressure(s, backpressureOf(c));
    advanceQueueIfNeeded(c);
    return d.p;
  }

  // ---- the default controller (Streams 5.6) ----
  function setUpControllerFromSink(s, sink, ds, hwm, size) {
    const start = ds && ds.start, write = ds && ds.write, close = ds && ds.close, abort = ds && ds.abort;
    let c;
    setUpController(s,
      () => (start === undefined ? undefined : apply(start, sink, [c.api])),
      (chunk) => promiseCall(write, sink, [chunk, c.api]),
      () => promiseCall(close, sink, []),
      (reason) => promiseCall(abort, sink, [reason]),
      hwm, size, (x) => { c = x; });
  }

  function setUpController(s, start, write, close, abort, hwm, size, got = undefined) {
    const c = {
      __proto__: null, api: undefined, stream: s, queue: undefined, queueTotalSize: 0,
      signal: apply(acSignal, new AC(), []), started: false,
      strategySizeAlgorithm: size, strategyHWM: hwm, writeAlgorithm: write,
      closeAlgorithm: close, abortAlgorithm: abort,
    };
    resetQueue(c);
    s.controller = c;
    newController(c);
    if (got) got(c);
    updateBackpressure(s, backpressureOf(c));
    const startResult = start();
    upon(resolvedWith(startResult), () => {
      c.started = true;
      advanceQueueIfNeeded(c);
    }, (r) => {
      c.started = true;
      dealWithRejection(s, r);
    });
  }

  function clearAlgorithms(c) {
    c.writeAlgorithm = c.closeAlgorithm = c.abortAlgorithm = c.strategySizeAlgorithm = undefined;
  }
  function chunkSizeOf(c, chunk) {
    if (c.strategySizeAlgorithm === undefined) return 1;
    try {
      return c.strategySizeAlgorithm(chunk);
    } catch (e) {
      if (c.stream.state === "writable") controllerError(c, e);
      return 1;
    }
  }
  const backpressureOf = (c) => c.strategyHWM - c.queueTotalSize <= 0;

  function advanceQueueIfNeeded(c) {
    const s = c.stream;
    if (!c.started || s.inFlightWriteRequest !== undefined) return;
    if (s.state === "erroring") { finishErroring(s); return; }
    if (c.queue.length === 0) return;
    const value = peekQueueValue(c);
    if (value === CLOSE) processClose(c);
    else processWrite(c, value);
  }

  function processClose(c) {
    const s = c.stream;
    s.inFlightCloseRequest = s.closeRequest;
    s.closeRequest = undefined;
    dequeueValue(c);
    const p = c.closeAlgorithm();
    clearAlgorithms(c);
    upon(p, () => finishInFlightClose(s), (r) => finishInFlightCloseWithError(s, r));
  }

  function processWrite(c, chunk) {
    const s = c.stream;
    s.inFlightWriteRequest = s.writeRequests.shift();
    upon(c.writeAlgorithm(chunk), () => {
      settle(s.inFlightWriteRequest, undefined);
      s.inFlightWriteRequest = undefined;
      dequeueValue(c);
      if (!closeQueuedOrInFlight(s) && s.state === "writable") updateBackpressure(s, backpressureOf(c));
      advanceQueueIfNeeded(c);
    }, (reason) => {
      if (s.state === "writable") clearAlgorithms(c);
      fail(s.inFlightWriteRequest, reason);
      s.inFlightWriteRequest = undefined;
      dealWithRejection(s, reason);
    });
  }

  function controllerError(c, error) {
    clearAlgorithms(c);
    startErroring(c.stream, error);
  }
  const errorIfNeeded = (c, e) => { if (c.stream.state === "writable") controllerError(c, e); };

  idl(WritableStream, "WritableStream");
  idl(WritableStreamDefaultWriter, "WritableStreamDefaultWriter");
  idl(WritableStreamDefaultController, "WritableStreamDefaultController");

  Object.assign(S, {
    wsOf, wsLocked: (s) => s.writer !== undefined, createWritable: createStream, abortStream,
    acquireWriter, writerRelease, writerWrite, writerCloseWithErrorPropagation,
    closeQueuedOrInFlight, errorIfNeeded,
  });
}
// WritableStream with its default writer and controller (WHATWG Streams 5). A controller's
// signal comes from the AbortController captured at build time (events_abort.js) and is
// aborted with native.signalAbort, whatever the program did to the globals.
