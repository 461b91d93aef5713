// URLPattern (WHATWG URL Pattern Standard): the tokenizer, the pattern parser, part list to
// regular expression and back to a normalized pattern string, the constructor-string parser,
// URLPatternInit processing, and the canonicalize-* callbacks, which run url.js's basic URL
// parser (native.urlParser) with a state override. Matching runs the compiled RegExp through
// the RegExp.prototype.exec captured here, so a program patching RegExp or String methods
// changes no result; a pathological group backtracks in the guest, bounded by the run's limits.
(native) => {
  const uncurry = Function.prototype.bind.bind(Function.prototype.call);
  const SP = String.prototype, AP = Array.prototype;
  const exec = uncurry(RegExp.prototype.exec), NewRegExp = RegExp;
  const sslice = uncurry(SP.slice), codePointAt = uncurry(SP.codePointAt), toLowerCase = uncurry(SP.toLowerCase);
  const sIndexOf = uncurry(SP.indexOf), lastIndexOf = uncurry(SP.lastIndexOf), toWellFormed = uncurry(SP.toWellFormed);
  const push = uncurry(AP.push), aslice = uncurry(AP.slice), join = uncurry(AP.join);
  const { defineProperty, hasOwn, getPrototypeOf } = Object;
  const NameSet = Set, setAdd = uncurry(Set.prototype.add), setHas = uncurry(Set.prototype.has);
  const setData = (o, k, value) => defineProperty(o, k, { value, writable: true, enumerable: true, configurable: true });
  const SyntaxErrorProto = SyntaxError.prototype;
  const { parse: urlParse, record: newRecord, states: S, userinfo, codePoints } = native.urlParser;

  const toUSV = (v) => toWellFormed(`${v}`);
  const invalid = (what) => new TypeError(`URLPattern: ${what}`);
  const dict = () => ({ __proto__: null });
  // special schemes and their default ports
  const SPECIAL = ["ftp", "file", "http", "https", "ws", "wss"];
  const DEFAULT_PORT = ["21", "", "80", "443", "80", "443"];
  const specialIndex = (s) => {
    for (let i = 0; i < SPECIAL.length; i++) if (SPECIAL[i] === s) return i;
    return -1;
  };

  // tokens (their types are strings, as the standard names them)
  const OPEN = "open", CLOSE = "close", REGEXP = "regexp", NAME = "name", CHAR = "char";
  const ESCAPED = "escaped-char", MODIFIER = "other-modifier", ASTERISK = "asterisk";
  const END = "end", INVALID = "invalid-char";
  const isNameCodePoint = (cp, first) =>
    exec(first ? /^[$_\p{ID_Start}]$/u : /^[$\u200c\u200d\p{ID_Continue}]$/u, cp) !== null;
  const isASCII = (cp) => codePointAt(cp, 0) <= 0x7f;
  const tokenize = (cps, strict) => {
    const tokens = [], n = cps.length;
    let index = 0, next = 0, cp;
    const get = () => (cp = cps[next++]);
    const seek = (i) => {
      next = i;
      get();
    };
    const add = (type, nextPos, valuePos, length = nextPos - valuePos) => {
      push(tokens, { type, index, value: join(aslice(cps, valuePos, valuePos + length), "") });
      index = nextPos;
    };
    const error = (nextPos, valuePos) => {
      if (strict) throw invalid(`invalid pattern syntax at code point ${index}`);
      add(INVALID, nextPos, valuePos);
    };
    while (index < n) {
      seek(index);
      if (cp === "*") add(ASTERISK, next, index);
      else if (cp === "+" || cp === "?") add(MODIFIER, next, index);
      else if (cp === "\\") {
        if (index === n - 1) error(next, index);
        else {
          const escaped = next;
          get();
          add(ESCAPED, next, escaped);
        }
      } else if (cp === "{") add(OPEN, next, index);
      else if (cp === "}") add(CLOSE, next, index);
      else if (cp === ":") {
        const start = next;
        let pos = start;
        while (pos < n) {
          seek(pos);
          if (!isNameCodePoint(cp, pos === start)) break;
          pos = next;
        }
        if (pos <= start) error(start, index);
        else add(NAME, pos, start);
      } else if (cp === "(") {
        const start = next;
        let depth = 1, pos = start, failed = false;
        const fail = () => {
          error(start, index);
          failed = true;
        };
        while (pos < n) {
          seek(pos);
          if (!isASCII(cp) || (pos === start && cp === "?")) {
            fail();
            break;
          }
          if (cp === "\\") {
            if (pos === n - 1) {
              fail();
              break;
            }
            get();
            if (!isASCII(cp)) {
              fail();
              break;
            }
            pos = next;
            continue;
          }
          if (cp === ")") {
            if (--depth === 0) {
              pos = next;
              break;
            }
          } else if (cp === "(") {
            depth++;
            if (pos === n - 1) {
              fail();
              break;
            }
            const temporary = next;
            get();
            if (cp !== "?") {
              fail();
              break;
            }
            next = temporary;
          }
          pos = next;
        }
        if (failed) continue;
        if (depth !== 0 || pos - start - 1 === 0) error(start, index);
        else add(REGEXP, pos, start, pos - start - 1);
      } else add(CHAR, next, index);
    }
    add(END, index, index);
    return tokens;
  };

  // parts: {type, value, modifier ("", "?", "*" or "+"), name, prefix, suffix}
  const FIXED = "fixed-text", SEGMENT = "segment-wildcard", FULL = "full-wildcard", REGEXP_PART = "regexp";
  const FULL_WILDCARD = ".*";
  const escapeWith = (specials) => (s) => {
    let out = "";
    for (let i = 0; i < s.length; i++) out += (sIndexOf(specials, s[i]) >= 0 ? "\\" : "") + s[i];
    return out;
  };
  const escapeRegexp = escapeWith(".+*?^${}()[]|/\\");
  const escapePattern = escapeWith("+*?:{}()\\");
  const segmentWildcard = (options) => `[^${escapeRegexp(options.delimiter)}]+?`;
  const part = (type, value, modifier, name = "", prefix = "", suffix = "") => ({ type, value, modifier, name, prefix, suffix });

  const parsePattern = (input, options, encode) => {
    const tokens = tokenize(codePoints(input), true);
    const segment = segmentWildcard(options);
    const parts = [];
    const names = new NameSet();
    let pending = "", i = 0, nextNumeric = 0;
    const consume = (type) => (tokens[i].type === type ? tokens[i++] : null);
    const consumeModifier = () => consume(MODIFIER) ?? consume(ASTERISK);
    const consumeRegexpOrWildcard = (name) => {
      const t = consume(REGEXP);
      return name === null && t === null ? consume(ASTERISK) : t;
    };
    const required = (type) => {
      const t = consume(type);
      if (t === null) throw invalid(`unexpected "${tokens[i].value}" at code point ${tokens[i].index}`);
      return t;
    };
    const consumeText = () => {
      let out = "";
      for (let t; (t = consume(CHAR) ?? consume(ESCAPED)) !== null; ) out += t.value;
      return out;
    };
    const flush = () => {
      if (pending === "") return;
      const value = encode(pending);
      pending = "";
      push(parts, part(FIXED, value, ""));
    };
    const addPart = (prefix, name, regexp, suffix, modifierToken) => {
      const modifier = modifierToken === null ? "" : modifierToken.value;
      if (name === null && regexp === null && modifier === "") {
        pending += prefix;
        return;
      }
      flush();
      if (name === null && regexp === null) {
        if (prefix !== "") push(parts, part(FIXED, encode(prefix), modifier));
        return;
      }
      let value = regexp === null ? segment : regexp.type === ASTERISK ? FULL_WILDCARD : regexp.value;
      let type = REGEXP_PART;
      if (value === segment) type = SEGMENT;
      else if (value === FULL_WILDCARD) type = FULL;
      if (type !== REGEXP_PART) value = "";
      const partName = name !== null ? name.value : `${nextNumeric++}`;
      if (setHas(names, partName)) throw invalid(`duplicate group name "${partName}"`);
      setAdd(names, partName);
      push(parts, part(type, value, modifier, partName, encode(prefix), encode(suffix)));
    };
    while (i < tokens.length) {
      const charToken = consume(CHAR);
      let name = consume(NAME);
      let regexp = consumeRegexpOrWildcard(name);
      if (name !== null || regexp !== null) {
        let prefix = charToken !== null ? charToken.value : "";
        if (prefix !== "" && prefix !== options.prefix) {
          pending += prefix;
          prefix = "";
        }
        flush();
        addPart(prefix, name, regexp, "", consumeModifier());
        continue;
      }
      const fixed = charToken ?? consume(ESCAPED);
      if (fixed !== null) {
        pending += fixed.value;
        continue;
      }
      if (consume(OPEN) !== null) {
        const prefix = consumeText();
        name = consume(NAME);
        regexp = consumeRegexpOrWildcard(name);
        const suffix = consumeText();
        required(CLOSE);
        addPart(prefix, name, regexp, suffix, consumeModifier());
        continue;
      }
      flush();
      required(END);
    }
    return parts;
  };

  const regexpAndNames = (parts, options) => {
    let out = "^";
    const names = [];
    for (let k = 0; k < parts.length; k++) {
      const { type, modifier, prefix, suffix } = parts[k];
      if (type === FIXED) {
        out += modifier === "" ? escapeRegexp(parts[k].value) : `(?:${escapeRegexp(parts[k].value)})${modifier}`;
        continue;
      }
      push(names, parts[k].name);
      const value = type === SEGMENT ? segmentWildcard(options) : type === FULL ? FULL_WILDCARD : parts[k].value;
      const single = modifier === "" || modifier === "?";
      if (prefix === "" && suffix === "") out += single ? `(${value})${modifier}` : `((?:${value})${modifier})`;
      else if (single) out += `(?:${escapeRegexp(prefix)}(${value})${escapeRegexp(suffix)})${modifier}`;
      else {
        const p = escapeRegexp(prefix), s = escapeRegexp(suffix);
        out += `(?:${p}((?:${value})(?:${s}${p}(?:${value}))*)${s})${modifier === "*" ? "?" : ""}`;
      }
    }
    return { source: `${out}$`, names };
  };

  const isDigit = (c) => c !== undefined && c >= "0" && c <= "9";
  const firstCodePoint = (s) => codePoints(sslice(s, 0, 2))[0];
  const patternString = (parts, options) => {
    let out = "";
    for (let k = 0; k < parts.length; k++) {
      const p = parts[k], previous = parts[k - 1] ?? null, next = parts[k + 1] ?? null;
      if (p.type === FIXED) {
        out += p.modifier === "" ? escapePattern(p.value) : `{${escapePattern(p.value)}}${p.modifier}`;
        continue;
      }
      const customName = !isDigit(p.name[0]);
      let grouping = p.suffix !== "" || (p.prefix !== "" && p.prefix !== options.prefix);
      if (!grouping && customName && p.type === SEGMENT && p.modifier === "" && next !== null && next.prefix === "" && next.suffix === "") {
        if (next.type === FIXED) grouping = next.value !== "" && isNameCodePoint(firstCodePoint(next.value), false);
        else grouping = isDigit(next.name[0]);
      }
      if (!grouping && p.prefix === "" && previous !== null && previous.type === FIXED && previous.value !== "" &&
          previous.value[previous.value.length - 1] === options.prefix) grouping = true;
      if (grouping) out += "{";
      out += escapePattern(p.prefix);
      if (customName) out += `:${p.name}`;
      if (p.type === REGEXP_PART) out += `(${p.value})`;
      else if (p.type === SEGMENT && !customName) out += `(${segmentWildcard(options)})`;
      else if (p.type === FULL) {
        if (!customName && (previous === null || previous.type === FIXED || previous.modifier !== "" || grouping || p.prefix !== "")) out += "*";
        else out += `(${FULL_WILDCARD})`;
      }
      if (p.type === SEGMENT && customName && p.suffix !== "" && isNameCodePoint(firstCodePoint(p.suffix), false)) out += "\\";
      out += escapePattern(p.suffix);
      if (grouping) out += "}";
      out += p.modifier;
    }
    return out;
  };

  // the canonicalize-* encoding callbacks: url.js's parser on a new record
  const canonical = (value, state, setup, read) => {
    if (value === "") return value;
    const u = newRecord();
    setup?.(u);
    if (urlParse(value, null, u, state) === null) throw invalid(`"${sslice(value, 0, 100)}" is not valid here`);
    return read(u);
  };
  const pathOf = (u) => {
    if (typeof u.path === "string") return u.path;
    let out = "";
    for (let k = 0; k < u.path.length; k++) out += `/${u.path[k]}`;
    return out;
  };
  const canonProtocol = (v) => (v === "" ? v : canonical(`${v}://dummy.test`, undefined, null, (u) => u.scheme));
  const canonUserinfo = (v) => (v === "" ? v : userinfo(v));
  // a host as a special URL's (a domain: mapped, lowercased, checked), unless the URL's own
  // scheme is known not to be special (as a Worker does; the standard's dummy URL has none)
  const canonHostname = (v, protocol) =>
    canonical(v, S.HOSTNAME, (u) => (u.scheme = protocol === undefined || protocol === "" ? "https" : protocol), (u) => u.host ?? "");
  const canonIPv6 = (v) => {
    let out = "";
    for (let k = 0; k < v.length; k++) {
      if (exec(/^[0-9a-fA-F[\]:]$/, v[k]) === null) throw invalid(`"${v[k]}" is not valid in an IPv6 hostname`);
      out += toLowerCase(v[k]);
    }
    return out;
  };
  const canonPort = (v, protocol) =>
    canonical(v, S.PORT, (u) => protocol !== undefined && (u.scheme = protocol), (u) => (u.port === null ? "" : `${u.port}`));
  const canonPathname = (v) => {
    if (v === "") return v;
    const slash = v[0] === "/";
    const out = canonical(slash ? v : `/-${v}`, S.PATH_START, null, pathOf);
    return slash ? out : sslice(out, 2);
  };
  const canonOpaquePathname = (v) => canonical(v, S.OPAQUE_PATH, (u) => (u.path = ""), pathOf);
  const canonSearch = (v) => canonical(v, S.QUERY, (u) => (u.query = ""), (u) => u.query);
  const canonHash = (v) => canonical(v, S.FRAGMENT, (u) => (u.fragment = ""), (u) => u.fragment);

  // compiling a component
  const DEFAULT = { delimiter: "", prefix: "", ignoreCase: false };
  const HOSTNAME = { delimiter: ".", prefix: "", ignoreCase: false };
  const PATHNAME = { delimiter: "/", prefix: "/", ignoreCase: false };
  const withCase = (o, ignoreCase) => ({ delimiter: o.delimiter, prefix: o.prefix, ignoreCase });
  const compile = (input, encode, options) => {
    const parts = parsePattern(input, options, encode);
    const { source, names } = regexpAndNames(parts, options);
    let regexp;
    try {
      regexp = new NewRegExp(source, options.ignoreCase ? "vi" : "v");
    } catch (e) {
      if (e !== null && typeof e === "object" && getPrototypeOf(e) === SyntaxErrorProto) throw invalid(`invalid regular expression group in "${sslice(input, 0, 100)}"`);
      throw e;
    }
    let hasRegExpGroups = false;
    for (let k = 0; k < parts.length; k++) if (parts[k].type === REGEXP_PART) hasRegExpGroups = true;
    return { pattern: patternString(parts, options), regexp, names, hasRegExpGroups };
  };
  const matchesSpecialScheme = (protocol) => {
    for (let k = 0; k < SPECIAL.length; k++) if (exec(protocol.regexp, SPECIAL[k]) !== null) return true;
    return false;
  };
  const isIPv6Pattern = (s) => s.length >= 2 && (s[0] === "[" || ((s[0] === "{" || s[0] === "\\") && s[1] === "["));

  // the constructor string parser
  const RANK = { __proto__: null, init: 0, protocol: 1, authority: 2, username: 3, password: 4, hostname: 5, port: 6, pathname: 7, search: 8, hash: 9, done: 10 };
  const parseConstructorString = (input) => {
    const cps = codePoints(input);
    const tokens = tokenize(cps, false);
    const result = dict();
    let start = 0, index = 0, increment = 1, groupDepth = 0, bracketDepth = 0, special = false, state = "init";
    const safe = (k) => tokens[k < tokens.length ? k : tokens.length - 1];
    const isChar = (k, value) => {
      const t = safe(k);
      return t.value === value && (t.type === CHAR || t.type === ESCAPED || t.type === INVALID);
    };
    const isSearchPrefix = () => {
      if (isChar(index, "?")) return true;
      if (tokens[index].value !== "?") return false;
      if (index === 0) return true;
      const type = safe(index - 1).type;
      return type !== NAME && type !== REGEXP && type !== CLOSE && type !== ASTERISK;
    };
    const componentString = () => join(aslice(cps, safe(start).index, tokens[index].index), "");
    const rewind = (to) => {
      index = start;
      increment = 0;
      if (to !== undefined) state = to;
    };
    const change = (to, skip) => {
      const r = RANK[state], t = RANK[to];
      if (state !== "init" && state !== "authority" && state !== "done") result[state] = componentString();
      if (state !== "init" && to !== "done") {
        if (r <= 4 && t >= 6 && t <= 9 && !hasOwn(result, "hostname")) result.hostname = "";
        if (r <= 6 && t >= 8 && t <= 9 && !hasOwn(result, "pathname")) result.pathname = special ? "/" : "";
        if (r <= 7 && to === "hash" && !hasOwn(result, "search")) result.search = "";
      }
      state = to;
      index += skip;
      start = index;
      increment = 0;
    };
    for (; index < tokens.length; index += increment) {
      increment = 1;
      const type = tokens[index].type;
      if (type === END) {
        if (state === "init") {
          rewind();
          if (isChar(index, "#")) change("hash", 1);
          else if (isSearchPrefix()) change("search", 1);
          else change("pathname", 0);
          continue;
        }
        if (state === "authority") {
          rewind("hostname");
          continue;
        }
        change("done", 0);
        break;
      }
      if (type === OPEN) {
        groupDepth++;
        continue;
      }
      if (groupDepth > 0) {
        if (type !== CLOSE) continue;
        groupDepth--;
      }
      switch (state) {
        case "init":
          if (isChar(index, ":")) rewind("protocol");
          break;
        case "protocol":
          if (isChar(index, ":")) {
            special = matchesSpecialScheme(compile(componentString(), canonProtocol, DEFAULT));
            if (isChar(index + 1, "/") && isChar(index + 2, "/")) change("authority", 3);
            else change(special ? "authority" : "pathname", 1);
          }
          break;
        case "authority":
          if (isChar(index, "@")) rewind("username");
          else if (isChar(index, "/") || isSearchPrefix() || isChar(index, "#")) rewind("hostname");
          break;
        case "username":
          if (isChar(index, ":")) change("password", 1);
          else if (isChar(index, "@")) change("hostname", 1);
          break;
        case "password":
          if (isChar(index, "@")) change("hostname", 1);
          break;
        case "hostname":
          if (isChar(index, "[")) bracketDepth++;
          else if (isChar(index, "]")) bracketDepth--;
          else if (isChar(index, ":") && bracketDepth === 0) change("port", 1);
          else if (isChar(index, "/")) change("pathname", 0);
          else if (isSearchPrefix()) change("search", 1);
          else if (isChar(index, "#")) change("hash", 1);
          break;
        case "port":
          if (isChar(index, "/")) change("pathname", 0);
          else if (isSearchPrefix()) change("search", 1);
          else if (isChar(index, "#")) change("hash", 1);
          break;
        case "pathname":
          if (isSearchPrefix()) change("search", 1);
          else if (isChar(index, "#")) change("hash", 1);
          break;
        case "search":
          if (isChar(index, "#")) change("hash", 1);
          break;
      }
    }
    if (hasOwn(result, "hostname") && !hasOwn(result, "port")) result.port = "";
    return result;
  };

  // URLPatternInit processing
  const COMPONENTS = ["protocol", "username", "password", "hostname", "port", "pathname", "search", "hash"];
  // (read and written in the order a Worker uses: the declaration's, not Web IDL's sorted one)
  const INIT_MEMBERS = ["protocol", "username", "password", "hostname", "port", "pathname", "search", "hash", "baseURL"];
  const processInit = (init, type, defaults) => {
    const pattern = type === "pattern";
    const result = dict();
    if (defaults !== null) for (let k = 0; k < COMPONENTS.length; k++) result[COMPONENTS[k]] = defaults;
    const has = (...names) => {
      for (let k = 0; k < names.length; k++) if (hasOwn(init, names[k])) return true;
      return false;
    };
    const fromBase = (s) => (pattern ? escapePattern(s) : s);
    let base = null;
    if (hasOwn(init, "baseURL")) {
      base = urlParse(init.baseURL);
      if (base === null) throw invalid(`invalid base URL "${sslice(init.baseURL, 0, 100)}"`);
      if (!has("protocol")) result.protocol = fromBase(base.scheme);
      if (!pattern && !has("protocol", "hostname", "port", "username")) result.username = fromBase(base.username);
      if (!pattern && !has("protocol", "hostname", "port", "username", "password")) result.password = fromBase(base.password);
      if (!has("protocol", "hostname")) result.hostname = fromBase(base.host ?? "");
      if (!has("protocol", "hostname", "port")) result.port = base.port === null ? "" : `${base.port}`;
      if (!has("protocol", "hostname", "port", "pathname")) result.pathname = fromBase(pathOf(base));
      if (!has("protocol", "hostname", "port", "pathname", "search")) result.search = fromBase(base.query ?? "");
      if (!has("protocol", "hostname", "port", "pathname", "search", "hash")) result.hash = fromBase(base.fragment ?? "");
    }
    if (has("protocol")) {
      const v = init.protocol;
      const stripped = v !== "" && v[v.length - 1] === ":" ? sslice(v, 0, -1) : v;
      result.protocol = pattern ? stripped : canonProtocol(stripped);
    }
    if (has("username")) result.username = pattern ? init.username : canonUserinfo(init.username);
    if (has("password")) result.password = pattern ? init.password : canonUserinfo(init.password);
    if (has("hostname")) result.hostname = pattern ? init.hostname : canonHostname(init.hostname, result.protocol);
    if (has("port")) result.port = pattern ? init.port : canonPort(init.port, result.protocol);
    if (has("pathname")) {
      let v = init.pathname;
      if (base !== null && typeof base.path !== "string" && !isAbsolutePathname(v, type)) {
        const basePath = fromBase(pathOf(base));
        const slash = lastIndexOf(basePath, "/");
        if (slash >= 0) v = sslice(basePath, 0, slash + 1) + v;
      }
      if (!pattern) v = specialIndex(result.protocol) >= 0 || result.protocol === "" || isAbsolutePathname(v, type) ? canonPathname(v) : canonOpaquePathname(v);
      result.pathname = v;
    }
    if (has("search")) {
      const v = init.search[0] === "?" ? sslice(init.search, 1) : init.search;
      result.search = pattern ? v : canonSearch(v);
    }
    if (has("hash")) {
      const v = init.hash[0] === "#" ? sslice(init.hash, 1) : init.hash;
      result.hash = pattern ? v : canonHash(v);
    }
    return result;
  };
  // "is an absolute pathname"; also where we part from the standard: under a scheme that is
  // not special it canonicalizes every pathname as an opaque path (whatwg/urlpattern#267:
  // "broken"); a Worker, Deno and Bun canonicalize one that starts with "/" as a URL's path
  // ("/a/./b c" is "/a/b%20c"), which is what such URLs' paths are
  const isAbsolutePathname = (s, type) => {
    if (s === "") return false;
    if (s[0] === "/") return true;
    if (type === "url" || s.length < 2) return false;
    return (s[0] === "\\" || s[0] === "{") && s[1] === "/";
  };

  // Web IDL conversions: URLPatternInput (USVString or URLPatternInit), URLPatternOptions
  const isObject = (v) => (typeof v === "object" && v !== null) || typeof v === "function";
  const toInput = (v) => {
    if (v !== undefined && v !== null && !isObject(v)) return toUSV(v);
    const init = dict();
    if (v === undefined || v === null) return init;
    for (let k = 0; k < INIT_MEMBERS.length; k++) {
      const value = v[INIT_MEMBERS[k]];
      if (value !== undefined) init[INIT_MEMBERS[k]] = toUSV(value);
    }
    return init;
  };
  const toIgnoreCase = (v) => {
    if (v === undefined || v === null) return false;
    if (!isObject(v)) throw new TypeError("URLPattern: options must be an object");
    return !!v.ignoreCase;
  };
  const copyInit = (init) => {
    const out = {};
    for (let k = 0; k < INIT_MEMBERS.length; k++) if (hasOwn(init, INIT_MEMBERS[k])) setData(out, INIT_MEMBERS[k], init[INIT_MEMBERS[k]]);
    return out;
  };

  const create = (input, baseURL, ignoreCase) => {
    let init = input;
    if (typeof input === "string") {
      init = parseConstructorString(input);
      if (baseURL === null && !hasOwn(init, "protocol")) throw invalid(`a relative pattern needs a base URL: "${sslice(input, 0, 100)}"`);
      if (baseURL !== null) init.baseURL = baseURL;
    } else if (baseURL !== null) throw invalid("a base URL is only allowed with a pattern string");
    const p = processInit(init, "pattern", null);
    for (let k = 0; k < COMPONENTS.length; k++) if (!hasOwn(p, COMPONENTS[k])) p[COMPONENTS[k]] = "*";
    const sp = specialIndex(p.protocol);
    if (sp >= 0 && p.port === DEFAULT_PORT[sp]) p.port = "";
    const c = dict();
    c.protocol = compile(p.protocol, canonProtocol, DEFAULT);
    c.username = compile(p.username, canonUserinfo, DEFAULT);
    c.password = compile(p.password, canonUserinfo, DEFAULT);
    c.hostname = compile(p.hostname, isIPv6Pattern(p.hostname) ? canonIPv6 : (v) => canonHostname(v), HOSTNAME);
    c.port = compile(p.port, (v) => canonPort(v), DEFAULT);
    c.pathname = matchesSpecialScheme(c.protocol)
      ? compile(p.pathname, canonPathname, withCase(PATHNAME, ignoreCase))
      : compile(p.pathname, isAbsolutePathname(p.pathname, "pattern") ? canonPathname : canonOpaquePathname, withCase(DEFAULT, ignoreCase));
    c.search = compile(p.search, canonSearch, withCase(DEFAULT, ignoreCase));
    c.hash = compile(p.hash, canonHash, withCase(DEFAULT, ignoreCase));
    return c;
  };

  // match: null, or the URLPatternResult (its members in the order a Worker gives them)
  const match = (c, input, baseURL) => {
    const inputs = [typeof input === "string" ? input : copyInit(input)];
    let values;
    if (typeof input !== "string") {
      if (baseURL !== undefined) throw invalid("a base URL is only allowed with a URL string");
      try {
        values = processInit(input, "url", "");
      } catch {
        return null;
      }
    } else {
      let base = null;
      if (baseURL !== undefined) {
        base = urlParse(baseURL);
        if (base === null) return null;
        push(inputs, baseURL);
      }
      const u = urlParse(input, base);
      if (u === null) return null;
      values = dict();
      values.protocol = u.scheme;
      values.username = u.username;
      values.password = u.password;
      values.hostname = u.host ?? "";
      values.port = u.port === null ? "" : `${u.port}`;
      values.pathname = pathOf(u);
      values.search = u.query ?? "";
      values.hash = u.fragment ?? "";
    }
    const found = dict();
    for (let k = 0; k < COMPONENTS.length; k++) {
      const name = COMPONENTS[k];
      const m = exec(c[name].regexp, values[name]);
      if (m === null) return null;
      const groups = {};
      for (let g = 1; g < m.length; g++) setData(groups, c[name].names[g - 1], m[g]);
      found[name] = { input: values[name], groups };
    }
    const { protocol, username, password, hostname, port, pathname, search, hash } = found;
    return { inputs, protocol, username, password, hostname, port, pathname, search, hash };
  };

  class URLPattern {
    #c;
    constructor(input = undefined, baseURL = undefined, options = undefined) {
      const n = arguments.length;
      const init = toInput(input);
      let base = null, opts = baseURL;
      if (n >= 3 || (n === 2 && baseURL !== undefined && !isObject(baseURL))) {
        base = toUSV(baseURL);
        opts = options;
      }
      this.#c = create(init, base, toIgnoreCase(opts));
    }
    test(input = undefined, baseURL = undefined) {
      const c = this.#c;
      return match(c, toInput(input), baseURL === undefined ? undefined : toUSV(baseURL)) !== null;
    }
    exec(input = undefined, baseURL = undefined) {
      const c = this.#c;
      return match(c, toInput(input), baseURL === undefined ? undefined : toUSV(baseURL));
    }
    get protocol() {
      return this.#c.protocol.pattern;
    }
    get username() {
      return this.#c.username.pattern;
    }
    get password() {
      return this.#c.password.pattern;
    }
    get hostname() {
      return this.#c.hostname.pattern;
    }
    get port() {
      return this.#c.port.pattern;
    }
    get pathname() {
      return this.#c.pathname.pattern;
    }
    get search() {
      return this.#c.search.pattern;
    }
    get hash() {
      return this.#c.hash.pattern;
    }
    get hasRegExpGroups() {
      const c = this.#c;
      for (let k = 0; k < COMPONENTS.length; k++) if (c[COMPONENTS[k]].hasRegExpGroups) return true;
      return false;
    }
  }
  defineProperty(URLPattern.prototype, Symbol.toStringTag, { value: "URLPattern", configurable: true });
  defineProperty(globalThis, "URLPattern", { value: URLPattern, writable: true, configurable: true });
};
