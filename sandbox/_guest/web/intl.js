// Intl (ECMA-402) from the formatjs polyfills, loaded on a run's first use. At build time this
// file only defines `Intl` (created if absent: collator.js adds to the same object) with lazy
// accessors, and the toLocaleString family; nothing of formatjs is in the snapshot's heap.
// The polyfills' code and CLDR data are entries of web_intl.c's table (sandbox/_intl_data.py):
// native.intlLoad(name) compiles a module or parses a data entry. The first read of a member
// (Intl.NumberFormat, or (1).toLocaleString(...) through it) loads its module and the modules
// it imports into a private `Intl` object (the polyfills install there, not on the program's
// globals); a class's locale data loads when a locale tag's entry is first read, so a run pays
// for the locales it uses only. What the loader keeps is in closures: a program can break
// formatjs's own code (it runs in the program's realm, as any polyfill), but it cannot make the
// loader load an entry twice or read anything but the table's entries.
(native) => {
  const { intlLoad } = native;
  const { defineProperty, getOwnPropertyDescriptor, keys, hasOwn } = Object;
  const { apply } = Reflect;
  const { isArray } = Array;
  const { min, trunc } = Math;
  const ToObject = Object;
  const SetAdd = Set.prototype.add;
  const NumberValueOf = Number.prototype.valueOf;
  const BigIntValueOf = BigInt.prototype.valueOf;
  const DateGetTime = Date.prototype.getTime;
  const { create } = Object;
  const StringIndexOf = String.prototype.indexOf;
  const StringSlice = String.prototype.slice;
  const DELETE = "\u0000-"; // sandbox/_intl_data.py's json_diff: the keys a diff removes
  const includes = (list, x) => {
    for (let i = 0; i < list.length; i++) if (list[i] === x) return true;
    return false;
  };
  const TAG = Symbol.toStringTag;

  // the prototypes' members a polyfill redefines when it loads: ours are put back afterwards
  const OWNED = [
    [Number.prototype, "toLocaleString"],
    [BigInt.prototype, "toLocaleString"],
    [Date.prototype, "toLocaleString"],
    [Date.prototype, "toLocaleDateString"],
    [Date.prototype, "toLocaleTimeString"],
  ];

  // ---- per-run state: made on the run's first use, never in the snapshot
  let run = null;
  const LOADING = {};
  const FAILED = {};
  const state = () => {
    if (run) return run;
    const manifest = intlLoad("manifest");
    const engine = {};
    run = { manifest, engine, modules: { __proto__: null }, loaded: { __proto__: null }, depth: 0 };
    for (const name of keys(MEMBERS)) {
      defineProperty(engine, name, {
        configurable: true,
        enumerable: false,
        // a module's top level sees the members loaded before it only (feature tests such as
        // getcanonicallocales' `Intl.Locale?.prototype` would otherwise load in a cycle)
        get: () => (run.depth ? undefined : loadMember(name)),
        set: (v) => defineProperty(engine, name, { value: v, writable: true, configurable: true }),
      });
    }
    return run;
  };

  // a module by its key (sandbox/_intl_data.py's "mod:<package>@<version>"): run once, with
  // the private Intl; what it exports (undefined for a polyfill that only installs)
  const importModule = (key) => {
    const s = state();
    const have = s.modules[key];
    if (have === LOADING || have === FAILED) throw new TypeError(`Intl: ${key} could not be loaded`);
    if (have !== undefined) return have.exports;
    const fn = intlLoad(key);
    if (typeof fn !== "function") throw new TypeError(`Intl: no module ${key}`);
    s.modules[key] = LOADING;
    const saved = [];
    for (const [o, k] of OWNED) saved[saved.length] = getOwnPropertyDescriptor(o, k);
    s.depth++;
    try {
      const exports = fn(importModule, s.engine, { __proto__: null }, intlLoad);
      s.modules[key] = { exports };
      return exports;
    } catch (e) {
      s.modules[key] = FAILED;
      throw e;
    } finally {
      s.depth--;
      for (let i = 0; i < OWNED.length; i++) {
        if (saved[i]) defineProperty(OWNED[i][0], OWNED[i][1], saved[i]);
      }
    }
  };

  // data entries: a diff (regional English) applies to a fresh copy of its base, itself
  // perhaps a diff (en-AU against en-001, en-001 against en: the manifest's bases)
  const merge = (base, diff) => {
    if (diff === null || typeof diff !== "object" || isArray(diff)) return diff;
    const out = {};
    const from = base !== null && typeof base === "object" && !isArray(base) ? base : {};
    const gone = hasOwn(diff, DELETE) ? diff[DELETE] : [];
    const put = (k, value) => defineProperty(out, k, { value, writable: true, enumerable: true, configurable: true });
    for (const k of keys(from)) if (!includes(gone, k)) put(k, from[k]);
    for (const k of keys(diff)) if (k !== DELETE) put(k, merge(from[k], diff[k]));
    return out;
  };
  const entryData = (info, entry) =>
    hasOwn(info.bases, entry) ? merge(entryData(info, info.bases[entry]), intlLoad(entry)) : intlLoad(entry);
  const loadData = (info, entry, add, cls) => {
    const s = state();
    if (s.loaded[entry]) return; // once, even if it failed half-way
    s.loaded[entry] = true;
    apply(add, cls, [entryData(info, entry)]);
  };

  // a polyfill's class: every tag the shipped data registers is available, and its entry in
  // cls.localeData loads the data on first read (formatjs reads localeData[tag] as it resolves)
  const lazyLocales = (cls, kind) => {
    const info = state().manifest.kinds[kind];
    const add = cls.__addLocaleData;
    const data = cls.localeData;
    const available = cls.availableLocales;
    cls.__defaultLocale = "en-US"; // as Workers and Node: before any data, so it stays
    for (const tag of keys(info.tags)) {
      apply(SetAdd, available, [tag]);
      if (hasOwn(data, tag)) continue;
      const settle = (value) =>
        defineProperty(data, tag, { value, writable: true, enumerable: true, configurable: true });
      defineProperty(data, tag, {
        configurable: true,
        enumerable: true,
        get() {
          settle(undefined);
          loadData(info, info.tags[tag], add, cls);
          return data[tag];
        },
        set: settle,
      });
    }
  };

  // the members: each loads its module (kind: the one the manifest names), then its data hooks
  const polyfill = (kind, name) => () => {
    const s = state();
    importModule(s.manifest.modules[kind]);
    const cls = getOwnPropertyDescriptor(s.engine, name)?.value;
    if (typeof cls !== "function") throw new TypeError(`Intl.${name} could not be loaded`);
    if (hasOwn(s.manifest.kinds, kind)) lazyLocales(cls, kind);
    return cls;
  };
  const exported = (which, name) => () => importModule(state().manifest[which])[name];

  // DateTimeFormat's IANA data: every zone is named in cls.tzData (formatjs lists its keys to
  // validate a timeZone), and a zone's transitions are unpacked on its first read
  const lazyZones = (cls) => {
    const addTZ = cls.__addTZData;
    const tz = intlLoad("tz");
    const zones = {};
    for (const line of tz.zones) {
      const zone = apply(StringSlice, line, [0, apply(StringIndexOf, line, ["|"])]);
      const settle = (value) =>
        defineProperty(zones, zone, { value, writable: true, enumerable: true, configurable: true });
      defineProperty(zones, zone, {
        configurable: true,
        enumerable: true,
        get() {
          apply(addTZ, cls, [{ abbrvs: tz.abbrvs, offsets: tz.offsets, zones: [line] }]);
          const value = cls.tzData[zone];
          cls.tzData = zones;
          settle(value);
          return value;
        },
        set: settle,
      });
    }
    cls.tzData = zones;
  };
  const dateTimeFormat = () => {
    const cls = polyfill("datetimeformat", "DateTimeFormat")();
    lazyZones(cls);
    return cls;
  };
  const MEMBERS = {
    __proto__: null,
    getCanonicalLocales: exported("getCanonicalLocales", "getCanonicalLocales"),
    supportedValuesOf: exported("supportedValuesOf", "supportedValuesOf"),
    DateTimeFormat: dateTimeFormat,
    DisplayNames: polyfill("displaynames", "DisplayNames"),
    ListFormat: polyfill("listformat", "ListFormat"),
    Locale: polyfill("locale", "Locale"),
    NumberFormat: polyfill("numberformat", "NumberFormat"),
    PluralRules: polyfill("pluralrules", "PluralRules"),
    RelativeTimeFormat: polyfill("relativetimeformat", "RelativeTimeFormat"),
    Segmenter: polyfill("segmenter", "Segmenter"),
  };
  const loadMember = (name) => {
    const s = state();
    const value = MEMBERS[name]();
    defineProperty(s.engine, name, { value, writable: true, configurable: true });
    return value;
  };
  const member = (name) => state().engine[name];

  // ---- the global: accessors that settle into data properties on first read
  let Intl = globalThis.Intl;
  if (typeof Intl !== "object" || Intl === null) {
    Intl = {};
    defineProperty(Intl, TAG, { value: "Intl", configurable: true });
    defineProperty(globalThis, "Intl", { value: Intl, writable: true, configurable: true });
  }
  for (const name of keys(MEMBERS)) {
    const get = () => {
      const value = member(name);
      if (getOwnPropertyDescriptor(Intl, name)?.get === get) {
        defineProperty(Intl, name, { value, writable: true, configurable: true });
      }
      return value;
    };
    defineProperty(Intl, name, {
      configurable: true,
      enumerable: false,
      get,
      set(value) {
        defineProperty(this, name, { value, writable: true, configurable: true });
      },
    });
  }

  // ---- toLocaleString & co through the members (ECMA-402 section 20), replacing QuickJS's
  let numberFormat = null; // the class and its `format` getter, as loaded (not as the program left them)
  const formatNumber = (x, locales, options) => {
    if (!numberFormat) {
      const NF = member("NumberFormat");
      numberFormat = { NF, format: getOwnPropertyDescriptor(NF.prototype, "format").get };
    }
    const nf = new numberFormat.NF(locales, options);
    return apply(numberFormat.format, nf, [])(x);
  };
  const methods = {
    toLocaleString(locales = undefined, options = undefined) {
      return formatNumber(apply(NumberValueOf, this, []), locales, options);
    },
  };
  const bigintMethods = {
    toLocaleString(locales = undefined, options = undefined) {
      return formatNumber(apply(BigIntValueOf, this, []), locales, options);
    },
  };
  const arrayMethods = {
    // Array.prototype.toLocaleString passes locales and options on (ECMA-402 20.5.1)
    toLocaleString(locales = undefined, options = undefined) {
      if (this === null || this === undefined) throw new TypeError("Array.prototype.toLocaleString called on null or undefined");
      const o = ToObject(this);
      const n = trunc(+o.length); // ToLength
      const len = n > 0 ? min(n, 2 ** 53 - 1) : 0;
      let r = "";
      for (let k = 0; k < len; k++) {
        if (k > 0) r += ",";
        const e = o[k];
        if (e !== undefined && e !== null) r += `${e.toLocaleString(locales, options)}`;
      }
      return r;
    },
  };
  // Date.prototype.toLocale{,Date,Time}String (ECMA-402 20.4): the options defaults of
  // ToDateTimeOptions, then DateTimeFormat's format; an invalid date gives "Invalid Date"
  let dateFormat = null;
  const DATE_FIELDS = ["weekday", "year", "month", "day"];
  const TIME_FIELDS = ["dayPeriod", "hour", "minute", "second", "fractionalSecondDigits"];
  const formatDate = (t, locales, options, required, defaults) => {
    if (t !== t) return "Invalid Date"; // NaN
    if (!dateFormat) {
      const DTF = member("DateTimeFormat");
      dateFormat = { DTF, format: getOwnPropertyDescriptor(DTF.prototype, "format").get };
    }
    const o = create(options === undefined ? null : ToObject(options));
    let needDefaults = true;
    if (required !== "time") for (const k of DATE_FIELDS) if (o[k] !== undefined) needDefaults = false;
    if (required !== "date") for (const k of TIME_FIELDS) if (o[k] !== undefined) needDefaults = false;
    const { dateStyle, timeStyle } = o;
    if (dateStyle !== undefined || timeStyle !== undefined) needDefaults = false;
    if (required === "date" && timeStyle !== undefined) throw new TypeError("toLocaleDateString does not take timeStyle");
    if (required === "time" && dateStyle !== undefined) throw new TypeError("toLocaleTimeString does not take dateStyle");
    const put = (k) => defineProperty(o, k, { value: "numeric", writable: true, enumerable: true, configurable: true });
    if (needDefaults && defaults !== "time") for (const k of ["year", "month", "day"]) put(k);
    if (needDefaults && defaults !== "date") for (const k of ["hour", "minute", "second"]) put(k);
    const dtf = new dateFormat.DTF(locales, o);
    return apply(dateFormat.format, dtf, [])(t);
  };
  const dateMethods = {
    toLocaleString(locales = undefined, options = undefined) {
      return formatDate(apply(DateGetTime, this, []), locales, options, "any", "all");
    },
    toLocaleDateString(locales = undefined, options = undefined) {
      return formatDate(apply(DateGetTime, this, []), locales, options, "date", "date");
    },
    toLocaleTimeString(locales = undefined, options = undefined) {
      return formatDate(apply(DateGetTime, this, []), locales, options, "time", "time");
    },
  };
  const install = (proto, from) => {
    for (const k of keys(from)) defineProperty(proto, k, { value: from[k], writable: true, configurable: true });
  };
  install(Number.prototype, methods);
  install(BigInt.prototype, bigintMethods);
  install(Array.prototype, arrayMethods);
  install(Date.prototype, dateMethods);
};
