// The URL parser (WHATWG URL Standard): the basic URL parser's state machine, the host parser
// (domains, IPv4 in all its number forms, IPv6, opaque hosts), percent-encoding and the
// serializer, for url_api.js (URL, URLSearchParams) and urlpattern.js through `native`.
// Domains go through UTS #46 processing with the IDNA data of the pinned idna wheel (idna.js).
(native) => {
  const { utf8Decode, utf8Encode } = native;
  const { defineProperty, hasOwn, assign } = Object;
  // the parser (through the host parser) uses only intrinsics captured here, so a program that
  // replaces String, Array or RegExp methods or globals cannot change how URLs (and URL
  // patterns, urlpattern.js) parse
  const uncurry = Function.prototype.bind.bind(Function.prototype.call);
  const SP = String.prototype, AP = Array.prototype;
  const exec = uncurry(RegExp.prototype.exec), test = (re, s) => exec(re, s) !== null;
  const sslice = uncurry(SP.slice), lower = uncurry(SP.toLowerCase), codePointAt = uncurry(SP.codePointAt);
  const split = uncurry(SP.split), sIncludes = uncurry(SP.includes), toWellFormed = uncurry(SP.toWellFormed);
  const sIndexOf = uncurry(SP.indexOf), replaceAll = uncurry(SP.replaceAll);
  const push = uncurry(AP.push), pop = uncurry(AP.pop), aslice = uncurry(AP.slice), join = uncurry(AP.join);
  const hex = uncurry(Number.prototype.toString), fromCharCode = String.fromCharCode;
  const encodeComponent = encodeURIComponent, toNumber = Number, toInt = parseInt, { floor } = Math;
  const FAIL = {};
  const SPECIAL = { __proto__: null, ftp: 21, file: null, http: 80, https: 443, ws: 80, wss: 443 };
  const isSpecial = (scheme) => hasOwn(SPECIAL, scheme);
  const toUSV = (v) => toWellFormed(`${v}`);
  const codePoints = (s) => {
    if (!test(/[\ud800-\udfff]/, s)) return split(s, "");
    const out = [];
    for (let i = 0; i < s.length; ) {
      const n = codePointAt(s, i) > 0xffff ? 2 : 1;
      push(out, sslice(s, i, i + n));
      i += n;
    }
    return out;
  };
  const last = (a) => a[a.length - 1];

  // percent-encode sets: a table of the ASCII code points each encodes (C0 controls, U+007F and
  // every non-ASCII code point are in all of them)
  const set = (parent, chars) => {
    const t = parent ? parent.slice() : Array.from({ length: 128 }, (_, i) => i < 0x20 || i === 0x7f);
    for (const ch of chars) t[ch.charCodeAt(0)] = true;
    return t;
  };
  const C0 = set(null, "");
  const FRAGMENT = set(C0, ' "<>`');
  const QUERY = set(C0, ' "#<>');
  const SPECIAL_QUERY = set(QUERY, "'");
  const PATH = set(QUERY, "?^`{}");
  const USERINFO = set(PATH, "/:;=@[\\]|");
  const COMPONENT = set(USERINFO, "$%&+,");
  const FORM = set(COMPONENT, "!'()~");
  const hex2 = (b) => `%${"0123456789ABCDEF"[b >> 4]}${"0123456789ABCDEF"[b & 15]}`; // b < 0x80
  const pct = (s, t) => {
    let out = "";
    for (let i = 0; i < s.length; i++) {
      const c = codePointAt(s, i);
      if (c < 0x80) out += t[c] ? hex2(c) : s[i];
      else {
        const n = c > 0xffff ? 2 : 1;
        out += encodeComponent(sslice(s, i, i + n));
        i += n - 1;
      }
    }
    return out;
  };
  const isHex = (c) => test(/^[0-9a-fA-F]$/, c ?? "");
  // percent-decode (bytes of the UTF-8 of s), then UTF-8 decode with replacement
  const pctDecode = (s) => {
    if (!sIncludes(s, "%")) return s;
    const b = utf8Encode(s);
    const out = new Uint8Array(b.length);
    let n = 0;
    for (let i = 0; i < b.length; i++) {
      const h = fromCharCode(b[i + 1] ?? 0, b[i + 2] ?? 0);
      if (b[i] === 0x25 && test(/^[0-9a-fA-F]{2}$/, h)) {
        out[n++] = toInt(h, 16);
        i += 2;
      } else out[n++] = b[i];
    }
    return utf8Decode(out.subarray(0, n), false, false)[0];
  };

  // domain to ASCII: UTS #46 processing and Punycode (idna.js)
  const { domainToASCII } = native;
  const toASCII = (domain) => domainToASCII(domain) ?? FAIL;

  // hosts: stored serialized (a domain, "[v6]", dotted IPv4, an opaque host or "")
  const FORBIDDEN_HOST = /[\0\t\n\r #/:<>?@[\\\]^|]/;
  const FORBIDDEN_DOMAIN = /[\0-\x1f #%/:<>?@[\\\]^|\x7f]/;
  const v4Number = (s) => {
    if (s === "") return FAIL;
    let r = 10;
    if (test(/^0[xX]/, s)) {
      s = sslice(s, 2);
      r = 16;
    } else if (s.length > 1 && s[0] === "0") {
      s = sslice(s, 1);
      r = 8;
    }
    if (s === "") return 0;
    const ok = r === 10 ? /^[0-9]+$/ : r === 16 ? /^[0-9a-fA-F]+$/ : /^[0-7]+$/;
    if (!test(ok, s)) return FAIL;
    return r === 10 ? toNumber(s) : r === 16 ? toNumber(`0x${s}`) : toInt(s, 8);
  };
  const endsInNumber = (s) => {
    const parts = split(s, ".");
    if (last(parts) === "") {
      if (parts.length === 1) return false;
      pop(parts);
    }
    return test(/^[0-9]+$/, last(parts)) || v4Number(last(parts)) !== FAIL;
  };
  const parseV4 = (s) => {
    const parts = split(s, ".");
    if (last(parts) === "" && parts.length > 1) pop(parts);
    if (parts.length > 4) return FAIL;
    const nums = [];
    for (let i = 0; i < parts.length; i++) {
      const n = v4Number(parts[i]);
      if (n === FAIL || (i < parts.length - 1 && n > 255)) return FAIL;
      push(nums, n);
    }
    let v = last(nums);
    if (v >= 256 ** (5 - nums.length)) return FAIL;
    for (let i = 0; i < nums.length - 1; i++) v += nums[i] * 256 ** (3 - i);
    return `${floor(v / 2 ** 24) % 256}.${floor(v / 2 ** 16) % 256}.${floor(v / 2 ** 8) % 256}.${v % 256}`;
  };
  const parseV6 = (s) => {
    const a = [0, 0, 0, 0, 0, 0, 0, 0];
    let idx = 0, compress = null, p = 0;
    const at = (k) => s[p + k];
    if (at(0) === ":") {
      if (at(1) !== ":") return FAIL;
      p += 2;
      compress = ++idx;
    }
    while (at(0) !== undefined) {
      if (idx === 8) return FAIL;
      if (at(0) === ":") {
        if (compress !== null) return FAIL;
        p++;
        compress = ++idx;
        continue;
      }
      let v = 0, len = 0;
      while (len < 4 && isHex(at(0))) {
        v = v * 16 + toInt(at(0), 16);
        p++;
        len++;
      }
      if (at(0) === ".") {
        if (len === 0) return FAIL;
        p -= len;
        if (idx > 6) return FAIL;
        let seen = 0;
        while (at(0) !== undefined) {
          let piece = null;
          if (seen > 0) {
            if (at(0) === "." && seen < 4) p++;
            else return FAIL;
          }
          if (!test(/[0-9]/, at(0) ?? "")) return FAIL;
          while (test(/[0-9]/, at(0) ?? "")) {
            const n = +at(0);
            if (piece === null) piece = n;
            else if (piece === 0) return FAIL;
            else piece = piece * 10 + n;
            if (piece > 255) return FAIL;
            p++;
          }
          a[idx] = a[idx] * 256 + piece;
          if (++seen === 2 || seen === 4) idx++;
        }
        if (seen !== 4) return FAIL;
        break;
      } else if (at(0) === ":") {
        p++;
        if (at(0) === undefined) return FAIL;
      } else if (at(0) !== undefined) return FAIL;
      a[idx++] = v;
    }
    if (compress !== null) {
      let swaps = idx - compress;
      idx = 7;
      while (idx !== 0 && swaps > 0) {
        const t = a[idx];
        a[idx] = a[compress + swaps - 1];
        a[compress + swaps - 1] = t;
        idx--;
        swaps--;
      }
    } else if (idx !== 8) return FAIL;
    return a;
  };
  const serializeV6 = (a) => {
    let best = -1, bestLen = 1;
    for (let i = 0; i < 8; ) {
      let j = i;
      while (j < 8 && a[j] === 0) j++;
      if (j - i > bestLen) {
        best = i;
        bestLen = j - i;
      }
      i = j === i ? i + 1 : j;
    }
    let out = "";
    for (let i = 0; i < 8; i++) {
      if (i === best) {
        out += i === 0 ? "::" : ":";
        i += bestLen - 1;
        continue;
      }
      out += hex(a[i], 16) + (i < 7 ? ":" : "");
    }
    return out;
  };
  const parseHost = (input, opaque) => {
    if (input[0] === "[") {
      if (last(input) !== "]") return FAIL;
      const a = parseV6(sslice(input, 1, -1));
      return a === FAIL ? FAIL : `[${serializeV6(a)}]`;
    }
    if (opaque) return test(FORBIDDEN_HOST, input) ? FAIL : pct(input, C0);
    const ascii = toASCII(pctDecode(input));
    if (ascii === FAIL || test(FORBIDDEN_DOMAIN, ascii)) return FAIL;
    return endsInNumber(ascii) ? parseV4(ascii) : ascii;
  };

  // the basic URL parser
  const isDrive = (s) => test(/^[a-zA-Z][:|]$/, s);
  const isNormDrive = (s) => test(/^[a-zA-Z]:$/, s);
  const startsWithDrive = (cps, p) =>
    isDrive((cps[p] ?? "") + (cps[p + 1] ?? "")) && (cps.length === p + 2 || sIncludes("/\\?#", cps[p + 2]));
  const isSingleDot = (s) => s === "." || lower(s) === "%2e";
  const isDoubleDot = (s) => test(/^(\.|%2e)(\.|%2e)$/i, s);
  const shorten = (u) => {
    if (u.scheme === "file" && u.path.length === 1 && isNormDrive(u.path[0])) return;
    pop(u.path);
  };
  // the C0-control-or-space trim, and tab and newline removal, of the basic URL parser
  const trimC0 = (s) => {
    let a = 0, b = s.length;
    while (a < b && s[a] <= " ") a++;
    while (b > a && s[b - 1] <= " ") b--;
    return sslice(s, a, b);
  };
  const dropTabsAndNewlines = (s) => {
    if (!test(/[\t\n\r]/, s)) return s;
    let out = "";
    for (let i = 0; i < s.length; i++) if (s[i] !== "\t" && s[i] !== "\n" && s[i] !== "\r") out += s[i];
    return out;
  };
  const hasCredentials = (u) => u.username !== "" || u.password !== "";
  const newRecord = () => ({ scheme: "", username: "", password: "", host: null, port: null, path: [], query: null, fragment: null });
  const S = {
    SCHEME_START: 1, SCHEME: 2, NO_SCHEME: 3, SPECIAL_RELATIVE_OR_AUTHORITY: 4, PATH_OR_AUTHORITY: 5,
    RELATIVE: 6, RELATIVE_SLASH: 7, SPECIAL_AUTHORITY_SLASHES: 8, SPECIAL_AUTHORITY_IGNORE_SLASHES: 9,
    AUTHORITY: 10, HOST: 11, HOSTNAME: 12, PORT: 13, FILE: 14, FILE_SLASH: 15, FILE_HOST: 16,
    PATH_START: 17, PATH: 18, OPAQUE_PATH: 19, QUERY: 20, FRAGMENT: 21,
  };
  const parse = (input, base, url, override) => {
    if (!url) {
      url = newRecord();
      input = trimC0(input);
    }
    const cps = codePoints(dropTabsAndNewlines(input));
    let state = override || S.SCHEME_START;
    let buf = "", atSeen = false, inBrackets = false, passwordSeen = false;
    for (let p = 0; ; p++) {
      const c = cps[p];
      const special = isSpecial(url.scheme);
      const slash = c === "/" || (special && c === "\\");
      switch (state) {
        case S.SCHEME_START:
          if (test(/[a-zA-Z]/, c ?? "")) {
            buf += lower(c);
            state = S.SCHEME;
          } else if (!override) {
            state = S.NO_SCHEME;
            p--;
          } else return FAIL;
          break;
        case S.SCHEME:
          if (test(/[a-zA-Z0-9+\-.]/, c ?? "")) buf += lower(c);
          else if (c === ":") {
            if (override) {
              if (isSpecial(url.scheme) !== isSpecial(buf)) return;
              if ((hasCredentials(url) || url.port !== null) && buf === "file") return;
              if (url.scheme === "file" && url.host === "") return;
            }
            url.scheme = buf;
            if (override) {
              if (url.port === SPECIAL[url.scheme]) url.port = null;
              return;
            }
            buf = "";
            if (url.scheme === "file") state = S.FILE;
            else if (isSpecial(url.scheme) && base && base.scheme === url.scheme) state = S.SPECIAL_RELATIVE_OR_AUTHORITY;
            else if (isSpecial(url.scheme)) state = S.SPECIAL_AUTHORITY_SLASHES;
            else if (cps[p + 1] === "/") {
              state = S.PATH_OR_AUTHORITY;
              p++;
            } else {
              url.path = "";
              state = S.OPAQUE_PATH;
            }
          } else if (!override) {
            buf = "";
            state = S.NO_SCHEME;
            p = -1;
          } else return FAIL;
          break;
        case S.NO_SCHEME:
          if (!base || (typeof base.path === "string" && c !== "#")) return FAIL;
          if (typeof base.path === "string") {
            assign(url, { scheme: base.scheme, path: base.path, query: base.query, fragment: "" });
            state = S.FRAGMENT;
          } else {
            state = base.scheme !== "file" ? S.RELATIVE : S.FILE;
            p--;
          }
          break;
        case S.SPECIAL_RELATIVE_OR_AUTHORITY:
          if (c === "/" && cps[p + 1] === "/") {
            state = S.SPECIAL_AUTHORITY_IGNORE_SLASHES;
            p++;
          } else {
            state = S.RELATIVE;
            p--;
          }
          break;
        case S.PATH_OR_AUTHORITY:
          if (c === "/") state = S.AUTHORITY;
          else {
            state = S.PATH;
            p--;
          }
          break;
        case S.RELATIVE:
          url.scheme = base.scheme;
          if (c === "/" || (isSpecial(url.scheme) && c === "\\")) state = S.RELATIVE_SLASH;
          else {
            const { username, password, host, port, query } = base;
            assign(url, { username, password, host, port, query, path: aslice(base.path) });
            if (c === "?") {
              url.query = "";
              state = S.QUERY;
            } else if (c === "#") {
              url.fragment = "";
              state = S.FRAGMENT;
            } else if (c !== undefined) {
              url.query = null;
              shorten(url);
              state = S.PATH;
              p--;
            }
          }
          break;
        case S.RELATIVE_SLASH:
          if (special && (c === "/" || c === "\\")) state = S.SPECIAL_AUTHORITY_IGNORE_SLASHES;
          else if (c === "/") state = S.AUTHORITY;
          else {
            const { username, password, host, port } = base;
            assign(url, { username, password, host, port });
            state = S.PATH;
            p--;
          }
          break;
        case S.SPECIAL_AUTHORITY_SLASHES:
          state = S.SPECIAL_AUTHORITY_IGNORE_SLASHES;
          if (c === "/" && cps[p + 1] === "/") p++;
          else p--;
          break;
        case S.SPECIAL_AUTHORITY_IGNORE_SLASHES:
          if (c !== "/" && c !== "\\") {
            state = S.AUTHORITY;
            p--;
          }
          break;
        case S.AUTHORITY:
          if (c === "@") {
            if (atSeen) buf = `%40${buf}`;
            atSeen = true;
            const bufCps = codePoints(buf);
            for (let k = 0; k < bufCps.length; k++) {
              const ch = bufCps[k];
              if (ch === ":" && !passwordSeen) passwordSeen = true;
              else if (passwordSeen) url.password += pct(ch, USERINFO);
              else url.username += pct(ch, USERINFO);
            }
            buf = "";
          } else if (c === undefined || slash || c === "?" || c === "#") {
            if (atSeen && buf === "") return FAIL;
            p -= codePoints(buf).length + 1;
            buf = "";
            state = S.HOST;
          } else buf += c;
          break;
        case S.HOST:
        case S.HOSTNAME:
          if (override && url.scheme === "file") {
            p--;
            state = S.FILE_HOST;
          } else if (c === ":" && !inBrackets) {
            if (buf === "") return FAIL;
            if (override === S.HOSTNAME) return FAIL;
            const host = parseHost(buf, !special);
            if (host === FAIL) return FAIL;
            url.host = host;
            buf = "";
            state = S.PORT;
          } else if (c === undefined || slash || c === "?" || c === "#") {
            p--;
            if (special && buf === "") return FAIL;
            if (override && buf === "" && (hasCredentials(url) || url.port !== null)) return FAIL;
            const host = parseHost(buf, !special);
            if (host === FAIL) return FAIL;
            url.host = host;
            buf = "";
            state = S.PATH_START;
            if (override) return;
          } else {
            if (c === "[") inBrackets = true;
            if (c === "]") inBrackets = false;
            buf += c;
          }
          break;
        case S.PORT:
          if (test(/[0-9]/, c ?? "")) buf += c;
          else if (c === undefined || slash || c === "?" || c === "#" || override) {
            if (buf !== "") {
              const port = toNumber(buf);
              if (port > 65535) return FAIL;
              url.port = port === SPECIAL[url.scheme] ? null : port;
              buf = "";
              if (override) return;
            }
            if (override) return FAIL;
            state = S.PATH_START;
            p--;
          } else return FAIL;
          break;
        case S.FILE:
          url.scheme = "file";
          url.host = "";
          if (c === "/" || c === "\\") state = S.FILE_SLASH;
          else if (base && base.scheme === "file") {
            assign(url, { host: base.host, path: aslice(base.path), query: base.query });
            if (c === "?") {
              url.query = "";
              state = S.QUERY;
            } else if (c === "#") {
              url.fragment = "";
              state = S.FRAGMENT;
            } else if (c !== undefined) {
              url.query = null;
              if (!startsWithDrive(cps, p)) shorten(url);
              else url.path = [];
              state = S.PATH;
              p--;
            }
          } else {
            state = S.PATH;
            p--;
          }
          break;
        case S.FILE_SLASH:
          if (c === "/" || c === "\\") state = S.FILE_HOST;
          else {
            if (base && base.scheme === "file") {
              url.host = base.host;
              if (!startsWithDrive(cps, p) && isNormDrive(base.path[0] ?? "")) push(url.path, base.path[0]);
            }
            state = S.PATH;
            p--;
          }
          break;
        case S.FILE_HOST:
          if (c === undefined || c === "/" || c === "\\" || c === "?" || c === "#") {
            p--;
            if (!override && isDrive(buf)) state = S.PATH;
            else if (buf === "") {
              url.host = "";
              if (override) return;
              state = S.PATH_START;
            } else {
              let host = parseHost(buf, !special);
              if (host === FAIL) return FAIL;
              if (host === "localhost") host = "";
              url.host = host;
              if (override) return;
              buf = "";
              state = S.PATH_START;
            }
          } else buf += c;
          break;
        case S.PATH_START:
          if (special) {
            state = S.PATH;
            if (c !== "/" && c !== "\\") p--;
          } else if (!override && c === "?") {
            url.query = "";
            state = S.QUERY;
          } else if (!override && c === "#") {
            url.fragment = "";
            state = S.FRAGMENT;
          } else if (c !== undefined) {
            state = S.PATH;
            if (c !== "/") p--;
          } else if (override && url.host === null) push(url.path, "");
          break;
        case S.PATH:
          if (c === undefined || slash || (!override && (c === "?" || c === "#"))) {
            if (isDoubleDot(buf)) {
              shorten(url);
              if (!slash) push(url.path, "");
            } else if (isSingleDot(buf) && !slash) push(url.path, "");
            else if (!isSingleDot(buf)) {
              if (url.scheme === "file" && url.path.length === 0 && isDrive(buf)) buf = `${buf[0]}:`;
              push(url.path, buf);
            }
            buf = "";
            if (c === "?") {
              url.query = "";
              state = S.QUERY;
            }
            if (c === "#") {
              url.fragment = "";
              state = S.FRAGMENT;
            }
          } else buf += pct(c, PATH);
          break;
        case S.OPAQUE_PATH:
          if (c === "?") {
            url.query = "";
            state = S.QUERY;
          } else if (c === "#") {
            url.fragment = "";
            state = S.FRAGMENT;
          } else if (c === " ") {
            // a space before the query or fragment is encoded, so opaque paths round-trip
            url.path += cps[p + 1] === "?" || cps[p + 1] === "#" ? "%20" : " ";
          } else if (c !== undefined) url.path += pct(c, C0);
          break;
        case S.QUERY:
          if ((!override && c === "#") || c === undefined) {
            url.query += pct(buf, special ? SPECIAL_QUERY : QUERY);
            buf = "";
            if (c === "#") {
              url.fragment = "";
              state = S.FRAGMENT;
            }
          } else buf += c;
          break;
        case S.FRAGMENT:
          if (c !== undefined) url.fragment += pct(c, FRAGMENT);
          break;
      }
      if (p >= cps.length) return url;
    }
  };
  const serialize = (u, noFragment) => {
    let out = `${u.scheme}:`;
    if (u.host !== null) {
      out += "//";
      if (hasCredentials(u)) out += u.username + (u.password ? `:${u.password}` : "") + "@";
      out += u.host + (u.port !== null ? `:${u.port}` : "");
    }
    if (typeof u.path === "string") out += u.path;
    else {
      if (u.host === null && u.path.length > 1 && u.path[0] === "") out += "/.";
      for (let k = 0; k < u.path.length; k++) out += `/${u.path[k]}`;
    }
    if (u.query !== null) out += `?${u.query}`;
    if (!noFragment && u.fragment !== null) out += `#${u.fragment}`;
    return out;
  };
  const origin = (u) => {
    if (u.scheme === "blob") {
      const inner = typeof u.path === "string" ? parse(u.path) : FAIL;
      return inner !== FAIL && (inner.scheme === "http" || inner.scheme === "https") ? origin(inner) : "null";
    }
    if (!isSpecial(u.scheme) || u.scheme === "file") return "null";
    return `${u.scheme}://${u.host}${u.port !== null ? `:${u.port}` : ""}`;
  };
  const cannotHaveCredentials = (u) => u.host === null || u.host === "" || u.scheme === "file";
  // for urlpattern.js: the basic URL parser (null for failure; with a record `url` and a state
  // override, as URL Pattern's canonicalize-* callbacks run it), a new record, the states
  native.urlParser = {
    parse: (input, base = null, url = undefined, state = undefined) => {
      const r = parse(input, base, url, state);
      return r === FAIL ? null : url ?? r;
    },
    record: newRecord, states: S, userinfo: (s) => pct(s, USERINFO), codePoints,
  };

  // for url_api.js (URL, URLSearchParams): the parser's internals, the record's parse (FAIL on
  // failure, editing `url` in place with a state override), serialization and origin
  native.urlInternals = {
    FAIL, FORM, USERINFO, S, parse, serialize, origin, pct, pctDecode, toUSV, cannotHaveCredentials,
  };
};
