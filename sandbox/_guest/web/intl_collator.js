(native) => {
  "use strict"; // a localeCompare called on null must see null, not the global
  // Intl.Collator (ECMA-402 chapter 10) and String.prototype.localeCompare through it. The
  // order is the Unicode Collation Algorithm over the root table (DUCET), compared in C
  // (../web_collate.c: native.collate); es, pl and tr have the tailorings of their letters,
  // the other shipped locales sort as the root does. Creates `Intl` when no earlier file did.
  const G = globalThis, apply = Reflect.apply, dp = Object.defineProperty, create = Object.create;
  const S = String, O = Object, TE = TypeError, RE = RangeError, WM = WeakMap;
  const uncurry = (f) => (self, ...args) => apply(f, self, args);
  const SP = String.prototype, AP = Array.prototype;
  const slice = uncurry(SP.slice), lower = uncurry(SP.toLowerCase), upper = uncurry(SP.toUpperCase);
  const split = uncurry(SP.split), lastIndexOf = uncurry(SP.lastIndexOf), indexOf = uncurry(SP.indexOf);
  const push = uncurry(AP.push), join = uncurry(AP.join), sort = uncurry(AP.sort);
  const aIndexOf = uncurry(AP.indexOf), aslice = uncurry(AP.slice), pop = uncurry(AP.pop);
  const code = uncurry(SP.charCodeAt);
  const wmGet = uncurry(WM.prototype.get), wmSet = uncurry(WM.prototype.set);
  const toString = (v) => `${v}`; // ToString: throws for a Symbol, as String(v) does not
  const toObject = (v) => {
    if (v === null || v === undefined) throw new TE("Cannot convert undefined or null to object");
    return O(v);
  };
  const isObject = (v) => (typeof v === "object" && v !== null) || typeof v === "function";
  const collate = native.collate;
  const slots = new WM();

  const LANGUAGES = ["en", "de", "fr", "es", "it", "pt", "nl", "ja", "zh", "ko", "ru", "ar", "hi", "tr", "pl"];
  const DEFAULT_LOCALE = "en-US";
  const SENSITIVITIES = ["base", "accent", "case", "variant"];

  // UTS #35 unicode_locale_id, as ECMA-402's IsStructurallyValidLanguageTag reads it (no
  // regular expressions: a program may replace RegExp.prototype.exec)
  const every = (s, ok) => {
    for (let i = 0; i < s.length; i++) if (!ok(code(s, i) | 0x20)) return false;
    return s.length > 0;
  };
  const letter = (c) => c >= 0x61 && c <= 0x7a;
  const digit = (c) => c >= 0x30 && c <= 0x39;
  const ALPHA = (s) => every(s, letter), DIGIT = (s) => every(s, digit);
  const ALNUM = (s) => every(s, (c) => letter(c) || digit(c));
  const test = (f, s) => f(s);
  const isLang = (s) => test(ALPHA, s) && (s.length === 2 || s.length === 3 || (s.length >= 5 && s.length <= 8));
  const isScript = (s) => s.length === 4 && test(ALPHA, s);
  const isRegion = (s) => (s.length === 2 && test(ALPHA, s)) || (s.length === 3 && test(DIGIT, s));
  const isVariant = (s) =>
    test(ALNUM, s) && ((s.length >= 5 && s.length <= 8) || (s.length === 4 && test(DIGIT, s[0])));

  // the canonical form of a structurally valid tag, or null
  function canonicalTag(tag) {
    const parts = split(lower(tag), "-");
    let i = 0;
    if (!isLang(parts[0]) || parts[0] === "root") return null;
    const out = [parts[i++]];
    if (i < parts.length && isScript(parts[i])) {
      push(out, upper(parts[i][0]) + slice(parts[i], 1));
      i++;
    }
    if (i < parts.length && isRegion(parts[i])) push(out, upper(parts[i++]));
    const variants = [];
    while (i < parts.length && isVariant(parts[i])) {
      if (aIndexOf(variants, parts[i]) >= 0) return null;
      push(variants, parts[i++]);
    }
    sort(variants);
    for (let k = 0; k < variants.length; k++) push(out, variants[k]);
    const singletons = [];
    const extensions = [];
    while (i < parts.length) {
      const single = parts[i++];
      if (single.length !== 1 || !test(ALNUM, single)) return null;
      if (single === "x") {
        const rest = [];
        while (i < parts.length && parts[i].length >= 1 && parts[i].length <= 8 && test(ALNUM, parts[i]))
          push(rest, parts[i++]);
        if (!rest.length || i < parts.length) return null;
        push(extensions, "x-" + join(rest, "-"));
        break;
      }
      if (aIndexOf(singletons, single) >= 0) return null;
      push(singletons, single);
      const body = [];
      while (i < parts.length && parts[i].length >= 2 && parts[i].length <= 8 && test(ALNUM, parts[i]))
        push(body, parts[i++]);
      if (!body.length) return null;
      if (single === "u") {
        const u = canonicalUnicodeExtension(body);
        if (u === null) return null;
        push(extensions, u);
      } else push(extensions, single + "-" + join(body, "-"));
    }
    // extensions in singleton order, the private use last
    const x = extensions.length && extensions[extensions.length - 1][0] === "x" ? pop(extensions) : null;
    sort(extensions);
    if (x !== null) push(extensions, x);
    for (let k = 0; k < extensions.length; k++) push(out, extensions[k]);
    return join(out, "-");
  }

  // "u-..." with attributes first, keywords sorted by key, "true" values dropped
  function canonicalUnicodeExtension(body) {
    const attributes = [];
    const keywords = [];
    let i = 0;
    while (i < body.length && body[i].length >= 3) push(attributes, body[i++]);
    while (i < body.length) {
      const key = body[i++];
      if (key.length !== 2 || test(DIGIT, key[1])) return null;
      const types = [];
      while (i < body.length && body[i].length >= 3) push(types, body[i++]);
      let value = join(types, "-");
      if (value === "true") value = "";
      for (let k = 0; k < keywords.length; k++) if (keywords[k][0] === key) return null;
      push(keywords, [key, value]);
    }
    sort(keywords, (a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    const out = ["u"];
    for (let k = 0; k < attributes.length; k++) push(out, attributes[k]);
    for (let k = 0; k < keywords.length; k++) {
      push(out, keywords[k][0]);
      if (keywords[k][1] !== "") push(out, keywords[k][1]);
    }
    return join(out, "-");
  }

  // ECMA-402 CanonicalizeLocaleList
  function canonicalizeLocaleList(locales) {
    if (locales === undefined) return [];
    const seen = [];
    const list = typeof locales === "string" ? [locales] : toObject(locales);
    const len = typeof locales === "string" ? 1 : toLength(list.length);
    for (let k = 0; k < len; k++) {
      if (!(k in list)) continue;
      const value = list[k];
      if (typeof value !== "string" && !isObject(value))
        throw new TE("a locale must be a string or an object");
      const text = toString(value);
      const tag = canonicalTag(text);
      if (tag === null) throw new RE(`Incorrect locale information provided: ${text}`);
      if (aIndexOf(seen, tag) < 0) push(seen, tag);
    }
    return seen;
  }

  function toLength(v) {
    const n = +v;
    if (!(n > 0)) return 0;
    return n >= 9007199254740991 ? 9007199254740991 : n - (n % 1);
  }

  // the tag without its Unicode extension, and the extension's keywords
  function splitExtension(tag) {
    const at = indexOf(tag, "-u-");
    const x = indexOf(tag, "-x-");
    if (at < 0 || (x >= 0 && x < at)) return [tag, null];
    const parts = split(slice(tag, at + 3), "-");
    let end = 0;
    while (end < parts.length && parts[end].length > 1) end++;
    const rest = end < parts.length ? "-" + join(aslice(parts, end), "-") : "";
    return [slice(tag, 0, at) + rest, aslice(parts, 0, end)];
  }

  function keywordValue(keywords, key) {
    if (!keywords) return undefined;
    for (let i = 0; i < keywords.length; i++) {
      if (keywords[i] !== key) continue;
      const types = [];
      for (let k = i + 1; k < keywords.length && keywords[k].length > 2; k++) push(types, keywords[k]);
      return join(types, "-");
    }
    return undefined;
  }

  // the shipped locales: a language of LANGUAGES with an optional script and a region that is
  // not private use (so "de-XX" falls back to "de", as ICU does)
  const PRIVATE_REGION = (r) => r === "AA" || r === "ZZ" || r[0] === "X" || (r[0] === "Q" && r[1] >= "M");
  function isAvailable(tag) {
    const parts = split(tag, "-");
    if (aIndexOf(LANGUAGES, parts[0]) < 0) return false;
    let i = 1;
    if (i < parts.length && parts[i].length === 4) i++;
    if (i < parts.length && isRegion(parts[i]) && !test(PRIVATE_REGION, parts[i])) i++;
    return i === parts.length;
  }

  function bestAvailable(tag) {
    let candidate = tag;
    for (;;) {
      if (isAvailable(candidate)) return candidate;
      let pos = lastIndexOf(candidate, "-");
      if (pos < 0) return undefined;
      if (pos >= 2 && candidate[pos - 2] === "-") pos -= 2;
      candidate = slice(candidate, 0, pos);
    }
  }

  function getOption(options, name, type, values, fallback) {
    let value = options[name];
    if (value === undefined) return fallback;
    value = type === "boolean" ? !!value : toString(value);
    if (values && aIndexOf(values, value) < 0)
      throw new RE(`Value ${value} out of range for Intl.Collator options property ${name}`);
    return value;
  }

  const coerceOptions = (options) => (options === undefined ? create(null) : toObject(options));
  const TYPE = (s) => {
    const parts = split(s, "-");
    for (let i = 0; i < parts.length; i++)
      if (parts[i].length < 3 || parts[i].length > 8 || !ALNUM(parts[i])) return false;
    return true;
  };
  const KEY_VALUES = { kf: ["false", "lower", "upper"], kn: ["false", "true"] };

  function initialize(collator, locales, options) {
    const requested = canonicalizeLocaleList(locales);
    options = coerceOptions(options);
    const usage = getOption(options, "usage", "string", ["sort", "search"], "sort");
    getOption(options, "localeMatcher", "string", ["lookup", "best fit"], "best fit");
    const collation = getOption(options, "collation", "string", null, undefined);
    if (collation !== undefined && !test(TYPE, collation)) throw new RE(`Invalid collation: ${collation}`);
    let numeric = getOption(options, "numeric", "boolean", null, undefined);
    if (numeric !== undefined) numeric = S(numeric);
    const caseFirst = getOption(options, "caseFirst", "string", ["upper", "lower", "false"], undefined);
    // ResolveLocale over the shipped locales, with the keys kf and kn ("co" has no value but
    // the default: no locale ships another collation)
    let found, keywords = null;
    for (let i = 0; i < requested.length && found === undefined; i++) {
      const parts = splitExtension(requested[i]);
      found = bestAvailable(parts[0]);
      if (found !== undefined) keywords = parts[1];
    }
    if (found === undefined) found = DEFAULT_LOCALE;
    const resolved = { kf: "false", kn: "false" };
    let supported = "";
    const fromOptions = { kf: caseFirst, kn: numeric };
    for (let k = 0; k < 2; k++) {
      const key = k ? "kn" : "kf";
      let addition = "";
      let requestedValue = keywordValue(keywords, key);
      if (requestedValue !== undefined) {
        if (requestedValue === "") requestedValue = "true";
        if (aIndexOf(KEY_VALUES[key], requestedValue) >= 0) {
          resolved[key] = requestedValue;
          addition = requestedValue === "true" ? "-" + key : "-" + key + "-" + requestedValue;
        }
      }
      const optionValue = fromOptions[key];
      if (optionValue !== undefined && aIndexOf(KEY_VALUES[key], optionValue) >= 0 && optionValue !== resolved[key]) {
        resolved[key] = optionValue;
        addition = "";
      }
      supported += addition;
    }
    const sensitivity = getOption(options, "sensitivity", "string", SENSITIVITIES, "variant");
    const ignorePunctuation = getOption(options, "ignorePunctuation", "boolean", null, false);
    // the tailorings web_collate.c has: Spanish ñ, the Polish and Turkish letters
    const language = split(found, "-")[0];
    const tailoring = language === "es" ? 1 : language === "pl" ? 2 : language === "tr" ? 3 : 0;
    // and the scripts they put first: ru Cyrillic, ar Arabic, hi Devanagari, ko Hangul and
    // Han, ja Latin, kana and Han, zh Han
    const reordering = language === "ru" ? 1 : language === "ar" ? 2 : language === "hi" ? 3
      : language === "ko" ? 4 : language === "ja" ? 5 : language === "zh" ? 6 : 0;
    const flags =
      (found === "fr-CA" ? 0x200 : 0) | // accents compared from the end: CLDR's [backwards 2]
      (reordering << 6) |
      (tailoring << 4) |
      (resolved.kn === "true" ? 1 : 0) |
      (ignorePunctuation ? 2 : 0) |
      (resolved.kf === "upper" ? 4 : resolved.kf === "lower" ? 8 : 0);
    wmSet(slots, collator, {
      locale: supported ? found + "-u" + supported : found,
      usage,
      sensitivity,
      ignorePunctuation,
      numeric: resolved.kn === "true",
      caseFirst: resolved.kf,
      level: aIndexOf(SENSITIVITIES, sensitivity),
      flags,
      bound: undefined,
    });
    return collator;
  }

  function slotsOf(self, what) {
    const s = isObject(self) ? wmGet(slots, self) : undefined;
    if (s === undefined) throw new TE(`${what} called on an object that is not an Intl.Collator`);
    return s;
  }

  function Collator(locales = undefined, options = undefined) {
    let proto = new.target ? new.target.prototype : CollatorPrototype;
    if (!isObject(proto)) proto = CollatorPrototype;
    return initialize(create(proto), locales, options);
  }
  const CollatorPrototype = Collator.prototype;

  const methods = {
    get compare() {
      const s = slotsOf(this, "get Intl.Collator.prototype.compare");
      if (s.bound === undefined) {
        const level = s.level, flags = s.flags;
        s.bound = [(x, y) => collate(typeof x === "string" ? x : toString(x), typeof y === "string" ? y : toString(y), level, flags)][0];
      }
      return s.bound;
    },
    resolvedOptions() {
      const s = slotsOf(this, "Intl.Collator.prototype.resolvedOptions");
      return {
        locale: s.locale,
        usage: s.usage,
        sensitivity: s.sensitivity,
        ignorePunctuation: s.ignorePunctuation,
        collation: "default",
        numeric: s.numeric,
        caseFirst: s.caseFirst,
      };
    },
  };
  const statics = {
    supportedLocalesOf(locales, options = undefined) {
      const requested = canonicalizeLocaleList(locales);
      getOption(coerceOptions(options), "localeMatcher", "string", ["lookup", "best fit"], "best fit");
      const out = [];
      for (let i = 0; i < requested.length; i++)
        if (bestAvailable(splitExtension(requested[i])[0]) !== undefined) push(out, requested[i]);
      return out;
    },
  };
  const compareGetter = O.getOwnPropertyDescriptor(methods, "compare").get;
  dp(CollatorPrototype, "compare", { get: compareGetter, enumerable: false, configurable: true });
  dp(CollatorPrototype, "resolvedOptions", { value: methods.resolvedOptions, writable: true, enumerable: false, configurable: true });
  dp(CollatorPrototype, Symbol.toStringTag, { value: "Intl.Collator", configurable: true });
  dp(Collator, "prototype", { writable: false, enumerable: false, configurable: false });
  dp(Collator, "supportedLocalesOf", { value: statics.supportedLocalesOf, writable: true, enumerable: false, configurable: true });

  let Intl = O.getOwnPropertyDescriptor(G, "Intl")?.value;
  if (!isObject(Intl)) {
    Intl = {};
    dp(Intl, Symbol.toStringTag, { value: "Intl", configurable: true });
    dp(G, "Intl", { value: Intl, writable: true, enumerable: false, configurable: true });
  }
  dp(Intl, "Collator", { value: Collator, writable: true, enumerable: false, configurable: true });

  // String.prototype.localeCompare (ECMA-402 19.1.1): a default collator made at the first
  // call without locales and options, a new one otherwise. Plain parameters (no defaults, no
  // `arguments`): a sort calls it for every pair; its length is set to 1 below.
  let defaultRecord;
  const localeCompare = {
    localeCompare(that, locales, options) {
      if (this === undefined || this === null) throw new TE("String.prototype.localeCompare called on null or undefined");
      const s = typeof this === "string" ? this : toString(this);
      const t = typeof that === "string" ? that : toString(that);
      let record;
      if (locales === undefined && options === undefined) {
        if (defaultRecord === undefined) defaultRecord = wmGet(slots, initialize(create(null), undefined, undefined));
        record = defaultRecord;
      } else record = wmGet(slots, initialize(create(null), locales, options));
      return collate(s, t, record.level, record.flags);
    },
  }.localeCompare;
  dp(localeCompare, "length", { value: 1 });
  dp(SP, "localeCompare", { value: localeCompare, writable: true, enumerable: false, configurable: true });
};
