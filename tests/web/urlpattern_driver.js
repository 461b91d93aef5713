// Runs URL Pattern corpus cases (tests/web/urlpattern_cases.json) and describes what happened
// as JSON-able data: the same function runs in quickjail (test_urlpattern.py) and in workerd
// (urlpattern_workerd.py, which records the expected values). A group's undefined is null.
(cases) => {
  const describe = (r) => {
    if (r === null) return null;
    const out = { keys: Object.keys(r), inputs: r.inputs };
    for (const k of ["protocol", "username", "password", "hostname", "port", "pathname", "search", "hash"]) {
      // sorted by name: workerd lists a component's groups last to first, the standard in order
      const groups = Object.entries(r[k].groups).map(([n, v]) => [n, v === undefined ? null : v]);
      out[k] = { input: r[k].input, groups: groups.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)) };
    }
    return out;
  };
  const error = (e) => ({ error: e instanceof Error ? e.name : typeof e });
  return cases.map(({ pattern, inputs }) => {
    let p;
    try {
      p = new URLPattern(...pattern);
    } catch (e) {
      return error(e);
    }
    const names = ["protocol", "username", "password", "hostname", "port", "pathname", "search", "hash"];
    const out = { components: names.map((n) => p[n]), hasRegExpGroups: p.hasRegExpGroups, results: [] };
    for (const args of inputs) {
      try {
        out.results.push({ test: p.test(...args), exec: describe(p.exec(...args)) });
      } catch (e) {
        out.results.push(error(e));
      }
    }
    return out;
  });
}
