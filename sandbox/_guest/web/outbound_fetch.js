(native) => {
  const G = globalThis, TE = TypeError, P = Promise;
  const apply = Reflect.apply, then = Promise.prototype.then;
  const reasonOf = Object.getOwnPropertyDescriptor(G.AbortSignal.prototype, "reason").get;
  const HOOK = "\x02fetch";
  const ignore = () => {};

  async function fetch(input, init = undefined) {
    const host = native[HOOK];
    if (host === undefined)
      throw new TE("fetch is not available in this sandbox: the host gave it no bridge.Fetch");
    const Request = native.Request, requestParts = native.requestParts;
    const makeResponse = native.makeResponse;
    if (typeof Request !== "function" || typeof requestParts !== "function" ||
        typeof makeResponse !== "function")
      throw new TE("fetch needs Request and Response, which this build lacks");
    const parts = requestParts(new Request(input, init));
    const signal = parts.signal;
    const hasSignal = signal !== undefined && signal !== null && native.isAbortSignal(signal);
    if (hasSignal && native.signalAborted(signal)) throw apply(reasonOf, signal, []);
    const body = parts.bodyRecord === null ? null : await native.consumeBody(parts.bodyRecord, "fetch");
    const ticket = host.open();
    const call = host.request(ticket, parts.method, parts.url, parts.headers, body, parts.redirect);
    let r, errorBody;
    if (hasSignal) {
      let done = false;
      r = await new P((resolve, reject) => {
        native.onAbort(signal, () => {
          apply(then, host.abort(ticket), [ignore, ignore]);  // stops the request or its body
          if (done) {
            if (errorBody !== undefined) errorBody(apply(reasonOf, signal, []));
            return;
          }
          done = true;
          reject(apply(reasonOf, signal, []));
        });
        apply(then, call, [(v) => { done = true; resolve(v); }, (e) => { done = true; reject(e); }]);
      });
    } else {
      r = await call;
    }
    let responseBody = null;
    if (r.stream) {
      // the body stays on the host: each read asks it for the next chunk, when the program
      // reads (native.streamFromPull); cancel closes the host's response
      const made = native.streamFromPull(() => host.read(ticket), () => host.cancel(ticket));
      responseBody = made[0];
      errorBody = made[1];
    } else if (r.body !== undefined && r.body !== null) {
      responseBody = r.body;
    }
    const status = r.status;
    // a null body status (Fetch) has no body: the Response constructor refuses one
    const nullBody = status === 101 || status === 103 || status === 204 || status === 205 ||
                     status === 304;
    return makeResponse(nullBody ? null : responseBody,
                        { status, statusText: r.statusText, headers: r.headers },
                        r.url, r.redirected);
  }

  Object.defineProperty(G, "fetch", { value: fetch, writable: true, configurable: true });
}
// fetch (WHATWG Fetch), as a capability. The host's bridge.Fetch hands its host functions to
// this file as the hidden global "\x02fetch" (quickjail.h's QJ_HIDDEN_GLOBAL): the run puts it
// on `native`, read here when fetch is called, so no program can reach or replace it. Without
// it fetch rejects with a TypeError, as a Worker's does with no outbound network. The host
// checks everything (allowlist, addresses, caps); this file only builds the Request and its
// parts (native.Request and native.requestParts, the body read whole by native.consumeBody),
// calls open and request (abort on the signal's abort) and makes the Response
// (native.makeResponse) as soon as the status and headers arrived. Its body is a stream whose
// pulls call read(ticket) for the next chunk (cancel(ticket) when the program cancels it;
// an abort after the response errors it), all read when fetch is called. The file sorts after events_abort.js,
// whose AbortSignal getter it captures.
