// What the fetch family (fetch_*.js, formdata.js, which run before url.js) needs of URL and
// URLSearchParams, captured here, right after url.js, so a program replacing the globals or
// their prototypes' members cannot reach them; those files read these when called.
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
  // a URLSearchParams' serialization, or null for anything else
  native.searchParamsString = (p) => {
    try {
      return apply(paramsToString, p, []);
    } catch {
      return null;
    }
  };
};
