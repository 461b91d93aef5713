// What the fetch family (fetch_*.js, formdata.js) needs from files later in name order: URL and
// URLSearchParams (url.js) and a ReadableStream's tee (streams_*.js, when they are built in),
// captured here, after them, so a program replacing the globals or their prototypes' members
// cannot reach them; the fetch files read these when called.
(native) => {
  const apply = Reflect.apply, gopd = Object.getOwnPropertyDescriptor;
  const URLC = URL, Params = URLSearchParams;
  const href = gopd(URLC.prototype, "href").get, username = gopd(URLC.prototype, "username").get;
  const password = gopd(URLC.prototype, "password").get;
  const paramsToString = Params.prototype.toString, paramsForEach = Params.prototype.forEach;
  // an absolute URL (there is no base) as {href, credentials}, or null when it does not parse
  native.parseURL = (input) => {
    let u;
    try {
      u = new URLC(input);
    } catch {
      return null;
    }
    return { href: apply(href, u, []), credentials: apply(username, u, []) !== "" || apply(password, u, []) !== "" };
  };
  // application/x-www-form-urlencoded parsing: [[name, value]]
  native.formParse = (text) => {
    const out = [];
    apply(paramsForEach, new Params(`${text}`), [(value, name) => (out[out.length] = [name, value])]);
    return out;
  };
  // clone() of a body that is a stream: the stream's own tee, unless the streams files give one
  const RS = globalThis.ReadableStream, tee = RS && RS.prototype.tee;
  if (typeof tee === "function") native.teeStream ??= (stream) => apply(tee, stream, []);
  // a URLSearchParams' serialization, or null for anything else
  native.searchParamsString = (p) => {
    try {
      return apply(paramsToString, p, []);
    } catch {
      return null;
    }
  };
};
