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
    let r;
    if (hasSignal) {
      r = await new P((resolve, reject) => {
        let done = false;
        native.onAbort(signal, () => {
          if (done) return;
          done = true;
          apply(then, host.abort(ticket), [ignore, ignore]);
          reject(apply(reasonOf, signal, []));
        });
        apply(then, call, [(v) => { done = true; resolve(v); }, (e) => { done = true; reject(e); }]);
      });
    } else {
      r = await call;
    }
    const status = r.status;
    // a null body status (Fetch) has no body: the Response constructor refuses one
    const nullBody = status === 101 || status === 103 || status === 204 || status === 205 ||
                     status === 304;
    return makeResponse(nullBody ? null : r.body,
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
// (native.makeResponse), all read when fetch is called. The file sorts after events_abort.js,
// whose AbortSignal getter it captures.
