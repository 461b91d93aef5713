(native) => {
  const S = native.streams, apply = Reflect.apply, dp = Object.defineProperty;
  const TE = TypeError, RE = RangeError, G = globalThis;
  const { then, chain, resolved, resolvedWith, rejected, markHandled, deferred, settle, fail, settled, failed, upon,
    follow, promiseCall, Queue, enqueueValueWithSize, dequeueValue, resetQueue, object, dict,
    callback, strategy, extractHighWaterMark, extractSizeAlgorithm, idl, INTERNAL, noop } = S;
  const asyncIteratorProto = Object.getPrototypeOf(Object.getPrototypeOf(async function* () {}).prototype);
  const SI = Symbol.iterator, SAI = Symbol.asyncIterator;
  const iterResult = (value, done) => ({ value, done });
  const microtask = (f) => upon(resolved(undefined), f);

  // internal records: a stream's state lives in a null-prototype object its public ReadableStream
  // holds in a private field, as do readers and controllers
  let rsOf, readerOf, ctrlOf, newStream, newReader, newController;

  class ReadableStream {
    #s;
    constructor(underlyingSource = undefined, strategyInit = undefined) {
      if (underlyingSource === INTERNAL) { this.#s = strategyInit; strategyInit.api = this; return; }
      if (underlyingSource === null) throw new TE("ReadableStream: underlyingSource is not an object");
      const st = strategy(strategyInit, "ReadableStream: strategy");
      const src = dict(underlyingSource, "ReadableStream: underlyingSource");
      const ds = src === undefined ? undefined : {
        __proto__: null,
        autoAllocateChunkSize: src.autoAllocateChunkSize,
        cancel: callback(src, "cancel", "underlyingSource"),
        pull: callback(src, "pull", "underlyingSource"),
        start: callback(src, "start", "underlyingSource"),
        type: src.type === undefined ? undefined : `${src.type}`,
      };
      if (ds !== undefined && ds.type !== undefined && ds.type !== "bytes")
        throw new TE(`ReadableStream: '${ds.type}' is not a valid stream type`);
      const s = this.#s = initStream(this);
      if (ds !== undefined && ds.type === "bytes") {
        if (st.size !== undefined) throw new RE("ReadableStream: a byte stream takes no size()");
        S.setUpByteControllerFromSource(s, underlyingSource, ds, extractHighWaterMark(st, 0));
        return;
      }
      const size = extractSizeAlgorithm(st), hwm = extractHighWaterMark(st, 1);
      setUpControllerFromSource(s, underlyingSource, ds, hwm, size);
    }
    get locked() { return locked(this.#s); }
    cancel(reason = undefined) {
      const s = rsOf(this);
      if (!s) return rejected(new TE("ReadableStream.prototype.cancel: this is not a ReadableStream"));
      if (locked(s)) return rejected(new TE("The ReadableStream is locked"));
      return cancelStream(s, reason);
    }
    getReader(options = undefined) {
      const s = this.#s, o = dict(options, "getReader: options");
      const mode = o === undefined ? undefined : o.mode;
      if (mode === undefined) return acquireReader(s).api;
      if (`${mode}` !== "byob") throw new TE(`getReader: '${mode}' is not a valid reader mode`);
      return S.acquireBYOBReader(s).api;
    }
    pipeThrough(transform, options = undefined) {
      const s = this.#s;
      if (arguments.length < 1) throw new TE("pipeThrough: 1 argument required");
      const t = dict(transform, "pipeThrough: transform");
      if (t === undefined) throw new TE("pipeThrough: transform is not an object");
      const readable = t.readable, rs = rsOf(readable);
      if (!rs) throw new TE("pipeThrough: transform.readable is not a ReadableStream");
      const writable = t.writable, ws = S.wsOf(writable);
      if (!ws) throw new TE("pipeThrough: transform.writable is not a WritableStream");
      const o = S.pipeOptions(options);
      if (locked(s)) throw new TE("pipeThrough: the ReadableStream is locked");
      if (S.wsLocked(ws)) throw new TE("pipeThrough: the WritableStream is locked");
      markHandled(S.pipeTo(s, ws, o.preventClose, o.preventAbort, o.preventCancel, o.signal));
      return readable;
    }
    pipeTo(destination, options = undefined) {
      const s = rsOf(this);
      if (!s) return rejected(new TE("pipeTo: this is not a ReadableStream"));
      const ws = S.wsOf(destination);
      if (!ws) return rejected(new TE("pipeTo: the destination is not a WritableStream"));
      let o;
      try { o = S.pipeOptions(options); } catch (e) { return rejected(e); }
      if (locked(s)) return rejected(new TE("pipeTo: the ReadableStream is locked"));
      if (S.wsLocked(ws)) return rejected(new TE("pipeTo: the WritableStream is locked"));
      return S.pipeTo(s, ws, o.preventClose, o.preventAbort, o.preventCancel, o.signal);
    }
    tee() {
      const s = this.#s, branches = s.controller.bytes ? S.byteTee(s) : S.tee(s);
      return [branches[0].api, branches[1].api];
    }
    values(options = undefined) {
      const s = this.#s, o = dict(options, "values: options");
      const preventCancel = o === undefined ? false : !!o.preventCancel;
      return newIterator(acquireReader(s), preventCancel);
    }
    static from(asyncIterable) {
      if (arguments.length < 1) throw new TE("ReadableStream.from: 1 argument required");
      return fromIterable(asyncIterable).api;
    }
    static {
      rsOf = (x) => (object(x) && #s in x ? x.#s : undefined);
      newStream = (s) => new ReadableStream(INTERNAL, s);
    }
  }
  dp(ReadableStream.prototype, SAI, { value: ReadableStream.prototype.values, writable: true, configurable: true });

  class ReadableStreamDefaultReader {
    #r;
    constructor(stream) {
      if (stream === INTERNAL) { this.#r = arguments[1]; this.#r.api = this; return; }
      if (arguments.length < 1) throw new TE("ReadableStreamDefaultReader: 1 argument required");
      const s = rsOf(stream);
      if (!s) throw new TE("ReadableStreamDefaultReader: the argument is not a ReadableStream");
      const r = this.#r = { __proto__: null, api: this };
      setUpReader(r, s);
    }
    get closed() {
      const r = readerOf(this);
      return r ? r.closed.p : rejected(new TE("closed: this is not a ReadableStreamDefaultReader"));
    }
    cancel(reason = undefined) {
      const r = readerOf(this);
      if (!r) return rejected(new TE("cancel: this is not a ReadableStreamDefaultReader"));
      if (r.stream === undefined) return rejected(new TE("cancel: the reader is released"));
      return cancelStream(r.stream, reason);
    }
    read() {
      const r = readerOf(this);
      if (!r) return rejected(new TE("read: this is not a ReadableStreamDefaultReader"));
      if (r.stream === undefined) return rejected(new TE("read: the reader is released"));
      const d = deferred();
      readerRead(r, {
        __proto__: null,
        chunk: (value) => settle(d, iterResult(value, false)),
        close: () => settle(d, iterResult(undefined, true)),
        error: (e) => fail(d, e),
      });
      return d.p;
    }
    releaseLock() {
      const r = this.#r;
      if (r.stream !== undefined) readerRelease(r);
    }
    static {
      readerOf = (x) => (object(x) && #r in x ? x.#r : undefined);
      newReader = (r) => new ReadableStreamDefaultReader(INTERNAL, r);
    }
  }

  class ReadableStreamDefaultController {
    #c;
    constructor() {
      if (arguments[0] !== INTERNAL) throw new TE("Illegal constructor");
      this.#c = arguments[1];
      this.#c.api = this;
    }
    get desiredSize() { return desiredSize(this.#c); }
    close() {
      const c = this.#c;
      if (!canCloseOrEnqueue(c)) throw new TE("close: the stream is closed or closing");
      controllerClose(c);
    }
    enqueue(chunk = undefined) {
      const c = this.#c;
      if (!canCloseOrEnqueue(c)) throw new TE("enqueue: the stream is closed or closing");
      controllerEnqueue(c, chunk);
    }
    error(e = undefined) { controllerError(this.#c, e); }
    static {
      ctrlOf = (x) => (object(x) && #c in x ? x.#c : undefined);
      newController = (c) => new ReadableStreamDefaultController(INTERNAL, c);
    }
  }

  // ---- the stream's abstract operations (Streams 4.9) ----
  function initStream(api) {
    return { __proto__: null, api, state: "readable", reader: undefined, storedError: undefined,
      disturbed: false, controller: undefined };
  }
  const locked = (s) => s.reader !== undefined;

  // CreateReadableStream: a stream whose algorithms the platform gives
  function createStream(start, pull, cancel, hwm = 1, size = () => 1) {
    const s = initStream(undefined);
    newStream(s);
    setUpController(s, start, pull, cancel, hwm, size);
    return s;
  }

  function cancelStream(s, reason) {
    s.disturbed = true;
    if (s.state === "closed") return resolved(undefined);
    if (s.state === "errored") return rejected(s.storedError);
    closeStream(s);
    const r = s.reader;
    if (r !== undefined && r.byob) {
      const requests = r.readIntoRequests;
      r.readIntoRequests = new Queue();
      while (requests.length) requests.shift().close(undefined);
    }
    const p = s.controller.cancelSteps(reason);
    return then(p, () => undefined);
  }

  function closeStream(s) {
    s.state = "closed";
    const r = s.reader;
    if (r === undefined) return;
    settle(r.closed, undefined);
    if (r.byob) return;
    const requests = r.readRequests;
    r.readRequests = new Queue();
    while (requests.length) requests.shift().close();
  }

  function errorStream(s, e) {
    s.state = "errored";
    s.storedError = e;
    const r = s.reader;
    if (r === undefined) return;
    fail(r.closed, e);
    markHandled(r.closed.p);
    errorReadRequests(r, e);
  }

  function errorReadRequests(r, e) {
    const key = r.byob ? "readIntoRequests" : "readRequests", requests = r[key];
    r[key] = new Queue();
    while (requests.length) requests.shift().error(e);
  }

  function fulfillReadRequest(s, chunk, done) {
    const req = s.reader.readRequests.shift();
    if (done) req.close();
    else req.chunk(chunk);
  }
  const numReadRequests = (s) => s.reader.readRequests.length;

  // ---- readers ----
  function acquireReader(s) {
    const r = { __proto__: null, api: undefined };
    setUpReader(r, s);
    newReader(r);
    return r;
  }
  function setUpReader(r, s) {
    if (locked(s)) throw new TE("The ReadableStream is locked to a reader");
    readerInit(r, s);
    r.readRequests = new Queue();
  }
  // ReadableStreamReaderGenericInitialize
  function readerInit(r, s) {
    r.stream = s;
    s.reader = r;
    if (s.state === "readable") r.closed = deferred();
    else if (s.state === "closed") r.closed = settled(undefined);
    else r.closed = failed(s.storedError);
  }
  function readerRelease(r) {
    const s = r.stream, e = new TE("The reader was released");
    if (s.state === "readable") fail(r.closed, e);
    else r.closed = failed(e);
    markHandled(r.closed.p);
    s.controller.releaseSteps();
    s.reader = undefined;
    r.stream = undefined;
    errorReadRequests(r, new TE("The reader was released"));
  }
  function readerRead(r, req) {
    const s = r.stream;
    s.disturbed = true;
    if (s.state === "closed") req.close();
    else if (s.state === "errored") req.error(s.storedError);
    else s.controller.pullSteps(req);
  }

  // ---- the default controller (Streams 4.10) ----
  function setUpControllerFromSource(s, source, ds, hwm, size) {
    const start = ds && ds.start, pull = ds && ds.pull, cancel = ds && ds.cancel;
    let c;
    setUpController(s,
      () => (start === undefined ? undefined : apply(start, source, [c.api])),
      () => promiseCall(pull, source, [c.api]),
      (reason) => promiseCall(cancel, source, [reason]),
      hwm, size, (x) => { c = x; });
  }

  function setUpController(s, start, pull, cancel, hwm, size, got = noop) {
    const c = {
      __proto__: null, api: undefined, stream: s, queue: undefined, queueTotalSize: 0,
      started: false, closeRequested: false, pullAgain: false, pulling: false,
      strategySizeAlgorithm: size, strategyHWM: hwm, pullAlgorithm: pull, cancelAlgorithm: cancel,
      cancelSteps: (reason) => {
        resetQueue(c);
        const result = c.cancelAlgorithm(reason);
        clearAlgorithms(c);
        return result;
      },
      releaseSteps: noop,
      pullSteps: (req) => {
        if (c.queue.length > 0) {
          const chunk = dequeueValue(c);
          if (c.closeRequested && c.queue.length === 0) {
            clearAlgorithms(c);
            closeStream(s);
          } else callPullIfNeeded(c);
          req.chunk(chunk);
        } else {
          s.reader.readRequests.push(req);
          callPullIfNeeded(c);
        }
      },
    };
    resetQueue(c);
    s.controller = c;
    newController(c);
    got(c);
    const startResult = start();
    upon(resolvedWith(startResult), () => {
      c.started = true;
      callPullIfNeeded(c);
    }, (r) => controllerError(c, r));
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

  function shouldCallPull(c) {
    const s = c.stream;
    if (!canCloseOrEnqueue(c) || !c.started) return false;
    if (locked(s) && numReadRequests(s) > 0) return true;
    return desiredSize(c) > 0;
  }

  function clearAlgorithms(c) {
    c.pullAlgorithm = undefined;
    c.cancelAlgorithm = undefined;
    c.strategySizeAlgorithm = undefined;
  }

  function controllerClose(c) {
    if (!canCloseOrEnqueue(c)) return;
    c.closeRequested = true;
    if (c.queue.length === 0) {
      clearAlgorithms(c);
      closeStream(c.stream);
    }
  }

  function controllerEnqueue(c, chunk) {
    if (!canCloseOrEnqueue(c)) return;
    const s = c.stream;
    if (locked(s) && numReadRequests(s) > 0) fulfillReadRequest(s, chunk, false);
    else {
      let chunkSize;
      try {
        chunkSize = c.strategySizeAlgorithm(chunk);
      } catch (e) {
        controllerError(c, e);
        throw e;
      }
      try {
        enqueueValueWithSize(c, chunk, chunkSize);
      } catch (e) {
        controllerError(c, e);
        throw e;
      }
    }
    callPullIfNeeded(c);
  }

  function controllerError(c, e) {
    const s = c.stream;
    if (s.state !== "readable") return;
    resetQueue(c);
    clearAlgorithms(c);
    errorStream(s, e);
  }

  function desiredSize(c) {
    const state = c.stream.state;
    if (state === "errored") return null;
    if (state === "closed") return 0;
    return c.strategyHWM - c.queueTotalSize;
  }
  const hasBackpressure = (c) => !shouldCallPull(c);
  const canCloseOrEnqueue = (c) => !c.closeRequested && c.stream.state === "readable";

  // ---- async iteration ----
  let iterOf;
  const END = { __proto__: null };
  class ReadableStreamAsyncIterator {
    #i;
    constructor(i) { this.#i = i; }
    next() {
      const i = iterOf(this);
      if (!i) return rejected(new TE("next: this is not a ReadableStream async iterator"));
      const nextSteps = () => {
        if (i.finished) return resolved(iterResult(undefined, true));
        return then(nextResult(i), (v) => {
          i.ongoing = undefined;
          if (v === END) { i.finished = true; return iterResult(undefined, true); }
          return iterResult(v, false);
        }, (e) => {
          i.ongoing = undefined;
          i.finished = true;
          throw e;
        });
      };
      i.ongoing = i.ongoing === undefined ? nextSteps() : chain(i.ongoing, nextSteps, nextSteps);
      return i.ongoing;
    }
    return(value) {
      const i = iterOf(this);
      if (!i) return rejected(new TE("return: this is not a ReadableStream async iterator"));
      const returnSteps = () => {
        if (i.finished) return resolved(iterResult(value, true));
        i.finished = true;
        return iteratorReturn(i, value);
      };
      i.ongoing = i.ongoing === undefined ? returnSteps() : chain(i.ongoing, returnSteps, returnSteps);
      return then(i.ongoing, () => iterResult(value, true));
    }
    static { iterOf = (x) => (object(x) && #i in x ? x.#i : undefined); }
  }
  const iterProto = ReadableStreamAsyncIterator.prototype;
  Object.setPrototypeOf(iterProto, asyncIteratorProto);
  for (const k of ["next", "return"]) {
    const d = Object.getOwnPropertyDescriptor(iterProto, k);
    dp(iterProto, k, { ...d, enumerable: true });
  }
  dp(iterProto, Symbol.toStringTag, { value: "ReadableStream AsyncIterator", configurable: true });
  const IterCtor = ReadableStreamAsyncIterator;
  delete iterProto.constructor;
  function newIterator(reader, preventCancel) {
    return new IterCtor({ __proto__: null, reader, preventCancel, ongoing: undefined, finished: false });
  }
  function nextResult(i) {
    const r = i.reader, d = deferred();
    readerRead(r, {
      __proto__: null,
      chunk: (chunk) => settle(d, chunk),
      close: () => { readerRelease(r); settle(d, END); },
      error: (e) => { readerRelease(r); fail(d, e); },
    });
    return d.p;
  }
  function iteratorReturn(i, arg) {
    const r = i.reader;
    if (r.stream === undefined) return resolved(undefined);
    if (!i.preventCancel) {
      const result = cancelStream(r.stream, arg);
      readerRelease(r);
      return result;
    }
    readerRelease(r);
    return resolved(undefined);
  }

  // ---- ReadableStream.from (ReadableStreamFromIterable) ----
  function fromIterable(iterable) {
    let method = iterable == null ? undefined : iterable[SAI], sync = false;
    if (method === undefined || method === null) {
      method = iterable == null ? undefined : iterable[SI];
      sync = true;
    }
    if (typeof method !== "function") throw new TE("ReadableStream.from: the argument is not iterable");
    const iterator = apply(method, iterable, []);
    if (!object(iterator)) throw new TE("ReadableStream.from: the iterator is not an object");
    const next = iterator.next;
    let s;
    const pull = () => {
      let result;
      try {
        result = apply(next, iterator, []);
      } catch (e) {
        return rejected(e);
      }
      if (sync) {
        if (!object(result)) return rejected(new TE("The iterator result is not an object"));
        let done, value;
        try {
          done = !!result.done;
          value = result.value;
        } catch (e) {
          return rejected(e);
        }
        if (done) { controllerClose(s.controller); return resolved(undefined); }
        return then(resolvedWith(value), (v) => { controllerEnqueue(s.controller, v); });
      }
      if (!object(result)) return rejected(new TE("The iterator result is not an object"));
      return then(resolvedWith(result), (res) => {
        if (!object(res)) throw new TE("The iterator result is not an object");
        if (res.done) controllerClose(s.controller);
        else controllerEnqueue(s.controller, res.value);
      });
    };
    const cancel = (reason) => {
      let ret, result;
      try {
        ret = iterator.return;
        if (ret === undefined || ret === null) return resolved(undefined);
        if (typeof ret !== "function") throw new TE("The iterator's return is not a function");
        result = apply(ret, iterator, [reason]);
      } catch (e) {
        return rejected(e);
      }
      if (sync && !object(result)) return rejected(new TE("The iterator result is not an object"));
      return then(resolvedWith(result), (res) => {
        if (!object(res)) throw new TE("The iterator result is not an object");
      });
    };
    s = createStream(noop, pull, cancel, 0);
    return s;
  }

  idl(ReadableStream, "ReadableStream");
  idl(ReadableStreamDefaultReader, "ReadableStreamDefaultReader");
  idl(ReadableStreamDefaultController, "ReadableStreamDefaultController");

  Object.assign(S, {
    rsOf, readerOf, ctrlOf, createStream, cancelStream, initStream, newStream, readerInit,
    closeStream, errorStream, fulfillReadRequest, numReadRequests, microtask, acquireReader, readerRead, readerRelease,
    controllerClose, controllerEnqueue, controllerError, desiredSize, hasBackpressure,
    canCloseOrEnqueue, locked,
  });

  // for the fetch family (Response/Request bodies), read when they are called
  native.isReadableStream = (x) => rsOf(x) !== undefined;
  native.streamLocked = (x) => locked(rsOf(x));
  native.streamDisturbed = (x) => rsOf(x).disturbed;
  native.streamFromBytes = (u8) => {
    const s = createStream(noop, () => resolved(undefined), () => resolved(undefined), 0);
    if (u8.byteLength > 0) controllerEnqueue(s.controller, u8);
    controllerClose(s.controller);
    return s.api;
  };
  // a stream whose chunks come from next() → a real Promise<[Uint8Array, done]>, asked for only when
  // a reader waits (high-water mark 0); cancel(reason) when the program cancels it. Returns
  // the stream and a function that errors it (for an aborted fetch).
  native.streamFromPull = (next, cancel) => {
    let s;
    const pull = () => {
      let p;
      try { p = next(); } catch (e) { return rejected(e); }
      // a host call's promise: its own then, captured (a program's Promise.prototype.then
      // must not see or replace the chunks)
      return then(p, (r) => {
        const chunk = r[0], done = r[1];
        if (S.u8len(chunk) > 0) controllerEnqueue(s.controller, chunk);
        if (done) controllerClose(s.controller);
      });
    };
    const stop = (reason) => {
      try { return then(cancel(reason), noop); } catch (e) { return rejected(e); }
    };
    s = createStream(noop, pull, stop, 0);
    return [s.api, (e) => controllerError(s.controller, e)];
  };
  native.readAllBytes = (stream, maxBytes = Infinity) => {
    const s = rsOf(stream);
    if (!s) return rejected(new TE("The body is not a ReadableStream"));
    let r;
    try { r = acquireReader(s); } catch (e) { return rejected(e); }
    const d = deferred(), chunks = new Queue(), U8 = Uint8Array;
    let total = 0;
    const step = () => readerRead(r, {
      __proto__: null,
      chunk: (chunk) => {
        if (!S.isUint8Array(chunk)) {
          fail(d, new TE("The body stream gave a chunk that is not a Uint8Array"));
          return;
        }
        const copy = S.copyBytes(chunk);
        total += S.u8len(copy);
        if (total > maxBytes) {
          const e = new RE(`The body is larger than ${maxBytes} bytes`);
          fail(d, e);
          markHandled(cancelStream(s, e));
          return;
        }
        chunks.push(copy);
        microtask(step);
      },
      close: () => {
        const out = new U8(total);
        let at = 0;
        while (chunks.length) {
          const c = chunks.shift();
          S.setBytes(out, c, at);
          at += S.u8len(c);
        }
        settle(d, out);
      },
      error: (e) => fail(d, e),
    });
    step();
    return d.p;
  };
}
// ReadableStream with its default reader and controller (WHATWG Streams 4), async iteration
// and ReadableStream.from. Byte streams (type: "bytes", BYOB readers) are
// streams_readable_bytes.js's, tee streams_tee.js's and pipeTo/pipeThrough streams_pipe.js's,
// reached through native.streams when called.
// Adds for the fetch family: native.isReadableStream(x), native.streamLocked(stream),
// native.streamDisturbed(stream), native.streamFromBytes(u8), native.streamFromPull(next,
// cancel) and native.readAllBytes(stream, maxBytes) (web/README.md).
