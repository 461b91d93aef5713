for (const s of ["", "=", "A", "AA", "AA=", "AA==", "AAA=", " A A A A ", "A\u00a0AAA", "AAAA====", "\u0000"]) { try { report(btoa(atob(s))); } catch (e) { report(e.name); } }
