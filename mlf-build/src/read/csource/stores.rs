//! What a TVM packed kernel stores into each of its tensor arguments, bounded from its C.
//!
//! A packed kernel names its arguments' data pointers as
//! `void* p0 = (((TVMValue*)args)[0].v_handle);` then `void* p0_1 = (((DLTensor*)p0)[0].data);`,
//! and stores through them as `((int32_t*)p0_1)[index] = …;` inside
//! `for (int32_t v = 0; v < N; ++v) {` loops. A store gives a bound — it writes element
//! `max(index)`, so at least `(max(index) + 1) × element size` bytes — only when that store is
//! certainly executed with every value of its loop variables and its index bound is exact
//! ([`interval`](super::interval)). Stores inside anything but constant loops (an `if`, `else`,
//! `while`, `switch`, another `for`), after a `return`, in a function with `break`, `continue`
//! or `goto`, or with an index the evaluator does not understand are counted as skipped.
//! Names declared twice or changed after their declaration are not followed.
//!
//! One pass over the tokens after a first pass that counts declarations and changes of names.

use std::collections::{BTreeMap, HashMap};

use super::interval::{Binding, bound};
use super::tokens::{Tok, parse_c_int, skip_group, tokenize};

/// The stores a kernel makes into its arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelStores {
    /// Per argument index: the most bytes a bounded store writes from the start of its data.
    pub writes: BTreeMap<usize, u64>,
    /// Stores into arguments with an exact bound.
    pub bounded: usize,
    /// Stores into arguments given no bound.
    pub skipped: usize,
}

/// How often each name is declared and changed in a function.
#[derive(Default)]
pub(super) struct Names {
    decls: HashMap<String, usize>,
    changes: HashMap<String, usize>,
}

impl Names {
    pub(super) fn count(toks: &[Tok]) -> Names {
        let mut n = Names::default();
        let p = |k: usize| -> Option<char> {
            match toks.get(k) {
                Some(Tok::Punct(c)) => Some(*c),
                _ => None,
            }
        };
        for (i, t) in toks.iter().enumerate() {
            let Tok::Ident(name) = t else { continue };
            let prev = i.checked_sub(1).map(|k| &toks[k]);
            let declared = matches!(prev, Some(Tok::Ident(_) | Tok::Punct('*')))
                && matches!(p(i + 1), Some('=' | ';' | ',' | '['));
            // Changes see through parentheses: `(x) = 1`, `++(x)`, `&(x)`.
            let mut a = i + 1;
            while p(a) == Some(')') {
                a += 1;
            }
            let mut b = i;
            while b > 0 && p(b - 1) == Some('(') {
                b -= 1;
            }
            let before = |k: usize| b.checked_sub(k).and_then(p);
            let assigned = p(a) == Some('=') && p(a + 1) != Some('=');
            let compound = matches!(p(a), Some('+' | '-' | '*' | '/' | '%' | '&' | '|' | '^')) && p(a + 1) == Some('=');
            let shifted = matches!(p(a), Some('<' | '>')) && p(a + 1) == p(a) && p(a + 2) == Some('=');
            let stepped = (p(a) == p(a + 1) && matches!(p(a), Some('+' | '-')))
                || (before(1) == before(2) && matches!(before(1), Some('+' | '-')))
                || (before(1) == Some('&') && before(2) != Some('&'));
            if declared {
                *n.decls.entry(name.clone()).or_default() += 1;
            } else if assigned || compound || shifted || stepped {
                *n.changes.entry(name.clone()).or_default() += 1;
            }
        }
        n
    }
    pub(super) fn decls(&self, name: &str) -> usize {
        self.decls.get(name).copied().unwrap_or(0)
    }
    pub(super) fn changes(&self, name: &str) -> usize {
        self.changes.get(name).copied().unwrap_or(0)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Frame {
    Block,
    /// A `for` loop with a constant extent of at least one.
    Loop,
    /// Anything that may run its body partly, never or with other values.
    Cond,
}

/// The scanning state of one function.
struct Scan<'a> {
    toks: &'a [Tok],
    names: Names,
    frames: Vec<Frame>,
    /// Loop variables in scope: name, largest value, frame depth.
    loops: Vec<(String, i64, usize)>,
    /// Locals in scope standing for an expression: name, token range, frame depth.
    locals: Vec<(String, usize, usize, usize)>,
    handles: HashMap<String, usize>,
    data: HashMap<String, usize>,
    pending: Option<(Frame, Option<(String, i64)>)>,
    /// Inside the statement of a control keyword without braces (which starts at `bare_start`).
    bare: bool,
    bare_start: usize,
    returned: bool,
    jumps: bool,
    out: KernelStores,
}

/// The stores of the function definition `text` (a packed kernel) into its arguments.
pub fn kernel_stores(text: &str) -> KernelStores {
    let (toks, _) = tokenize(text, &mut Vec::new());
    let jumps = toks.iter().any(|t| matches!(t, Tok::Ident(k) if matches!(k.as_str(), "break" | "continue" | "goto")));
    let mut s = Scan {
        toks: &toks,
        names: Names::count(&toks),
        frames: Vec::new(),
        loops: Vec::new(),
        locals: Vec::new(),
        handles: HashMap::new(),
        data: HashMap::new(),
        pending: None,
        bare: false,
        bare_start: 0,
        returned: false,
        jumps,
        out: KernelStores::default(),
    };
    let mut i = 0;
    while i < toks.len() {
        i = s.step(i);
    }
    s.out
}

impl Scan<'_> {
    /// Reads the token at `i`; returns where to go on.
    fn step(&mut self, i: usize) -> usize {
        let toks = self.toks;
        let at_start =
            i == 0 || matches!(toks[i - 1], Tok::Punct(';' | '{' | '}')) || (self.bare && i == self.bare_start);
        match &toks[i] {
            Tok::Punct('{') => {
                let (frame, var) = self.pending.take().unwrap_or((Frame::Block, None));
                self.frames.push(frame);
                if let Some((v, hi)) = var {
                    self.loops.push((v, hi, self.frames.len()));
                }
                i + 1
            }
            Tok::Punct('}') => {
                self.frames.pop();
                let depth = self.frames.len();
                self.loops.retain(|l| l.2 <= depth);
                self.locals.retain(|l| l.3 <= depth);
                i + 1
            }
            Tok::Punct(';') => {
                self.bare = false;
                i + 1
            }
            Tok::Ident(k) if matches!(k.as_str(), "for" | "if" | "while" | "switch" | "else" | "do") => self.control(i),
            Tok::Ident(k) if k == "return" => {
                if !self.bare && !self.frames.contains(&Frame::Cond) {
                    self.returned = true;
                }
                i + 1
            }
            Tok::Punct('(') if at_start => self.store(i),
            Tok::Ident(_) if at_start => {
                self.declaration(i);
                i + 1
            }
            _ => i + 1,
        }
    }

    /// A control keyword at `i`: the frame its body opens. Returns where its body starts.
    fn control(&mut self, i: usize) -> usize {
        let toks = self.toks;
        let after = match toks.get(i + 1) {
            Some(Tok::Punct('(')) => skip_group(toks, i + 1),
            _ => i + 1,
        };
        let mut frame = (Frame::Cond, None);
        if let Some((v, n)) = canonical_for(toks, i) {
            if n >= 1 && self.names.decls(&v) == 1 && self.names.changes(&v) == 1 {
                frame = (Frame::Loop, Some((v, n - 1)));
            }
        }
        match toks.get(after) {
            Some(Tok::Punct('{')) => self.pending = Some(frame),
            Some(Tok::Ident(k)) if k == "if" => {}
            _ => {
                self.bare = true;
                self.bare_start = after;
            }
        }
        after
    }

    /// `T NAME = …;` at `i`: a local standing for an expression, or an argument's handle or
    /// data pointer.
    fn declaration(&mut self, i: usize) {
        let toks = self.toks;
        let (name, eq) = match (toks.get(i + 1), toks.get(i + 2), toks.get(i + 3)) {
            (Some(Tok::Ident(n)), Some(Tok::Punct('=')), _) => (n, i + 2),
            (Some(Tok::Punct('*')), Some(Tok::Ident(n)), Some(Tok::Punct('='))) => (n, i + 3),
            _ => return,
        };
        if self.names.decls(name) != 1 || self.names.changes(name) != 0 {
            return;
        }
        let Some(semi) = toks[eq..].iter().position(|t| *t == Tok::Punct(';')).map(|k| eq + k) else { return };
        let rhs = &toks[eq + 1..semi];
        if matches!(&toks[i], Tok::Ident(t) if matches!(t.as_str(), "int32_t" | "int64_t" | "int")) && eq == i + 2 {
            self.locals.push((name.clone(), eq + 1, semi, self.frames.len()));
        } else if let Some(k) = pointer_of(rhs, "TVMValue", "args", "v_handle") {
            self.handles.insert(name.clone(), k);
        } else if let Some(h) = handle_data(rhs) {
            if let Some(&k) = self.handles.get(h) {
                self.data.insert(name.clone(), k);
            }
        }
    }

    /// A store `((T*)NAME)[index] = …;` at `i` into an argument's data.
    fn store(&mut self, i: usize) -> usize {
        let toks = self.toks;
        let pat = (toks.get(i + 1), toks.get(i + 2), toks.get(i + 3), toks.get(i + 4), toks.get(i + 5));
        let (
            Some(Tok::Punct('(')),
            Some(Tok::Ident(ty)),
            Some(Tok::Punct('*')),
            Some(Tok::Punct(')')),
            Some(Tok::Ident(d)),
        ) = pat
        else {
            return i + 1;
        };
        if toks.get(i + 6) != Some(&Tok::Punct(')')) || toks.get(i + 7) != Some(&Tok::Punct('[')) {
            return i + 1;
        }
        let close = skip_group(toks, i + 7);
        let is_store = toks.get(close) == Some(&Tok::Punct('=')) && toks.get(close + 1) != Some(&Tok::Punct('='));
        let Some(&arg) = self.data.get(d.as_str()).filter(|_| is_store) else { return i + 1 };
        let exact = !self.bare && !self.returned && !self.jumps && !self.frames.contains(&Frame::Cond);
        let bytes = exact.then(|| self.index_bytes(i + 8, close - 1, elem_bytes(ty)?)).flatten();
        match bytes {
            Some(b) => {
                self.out.bounded += 1;
                let w = self.out.writes.entry(arg).or_default();
                *w = (*w).max(b);
            }
            None => self.out.skipped += 1,
        }
        close
    }

    /// Bytes from the start of the data to the end of the largest element `toks[start..end]`
    /// indexes.
    fn index_bytes(&self, start: usize, end: usize, elem: u64) -> Option<u64> {
        let lookup = |n: &str| -> Option<Binding> {
            let local = self.locals.iter().rev().find(|l| l.0 == n);
            let mut vars = self.loops.iter().filter(|l| l.0 == n);
            match (local, vars.next(), vars.next()) {
                (Some(l), None, _) => Some(Binding::Expr(l.1, l.2)),
                (None, Some(v), None) => Some(Binding::Var(v.1)),
                _ => None,
            }
        };
        let r = bound(self.toks, start, end, &lookup)?;
        let count = u64::try_from(r.hi).ok()?.checked_add(1)?;
        count.checked_mul(elem)
    }
}

/// `for (int32_t v = 0; v < N; ++v)` at `i`: the variable and `N`.
pub(super) fn canonical_for(toks: &[Tok], i: usize) -> Option<(String, i64)> {
    let t = toks.get(i..i + 15)?;
    let id = |k: usize| match &t[k] {
        Tok::Ident(x) => Some(x.as_str()),
        _ => None,
    };
    let pu = |k: usize, c: char| t[k] == Tok::Punct(c);
    let v = id(3)?;
    let shape = pu(1, '(') && matches!(id(2)?, "int32_t" | "int64_t" | "int") && pu(4, '=');
    let shape = shape && t[5] == Tok::Number("0".into()) && pu(6, ';') && id(7)? == v && pu(8, '<');
    let shape = shape && pu(10, ';') && pu(11, '+') && pu(12, '+') && id(13)? == v && pu(14, ')');
    let Tok::Number(n) = &t[9] else { return None };
    let n = i64::try_from(parse_c_int(n)?).ok()?;
    shape.then(|| (v.to_string(), n))
}

/// `(((T*)base)[K].field)`: `K`.
pub(super) fn pointer_of(rhs: &[Tok], ty: &str, base: &str, field: &str) -> Option<usize> {
    let [
        Tok::Punct('('),
        Tok::Punct('('),
        Tok::Punct('('),
        Tok::Ident(t),
        Tok::Punct('*'),
        Tok::Punct(')'),
        Tok::Ident(b),
        Tok::Punct(')'),
        Tok::Punct('['),
        Tok::Number(k),
        Tok::Punct(']'),
        Tok::Punct('.'),
        Tok::Ident(f),
        Tok::Punct(')'),
    ] = rhs
    else {
        return None;
    };
    (t == ty && b == base && f == field).then(|| parse_c_int(k).and_then(|k| usize::try_from(k).ok())).flatten()
}

/// `(((DLTensor*)H)[0].data)`: `H`.
pub(super) fn handle_data(rhs: &[Tok]) -> Option<&str> {
    let Some(Tok::Ident(h)) = rhs.get(6) else { return None };
    (pointer_of(rhs, "DLTensor", h, "data") == Some(0)).then_some(h.as_str())
}

/// Bytes of a C element type TVM stores through.
pub fn elem_bytes(ty: &str) -> Option<u64> {
    match ty {
        "int8_t" | "uint8_t" | "char" | "bool" => Some(1),
        "int16_t" | "uint16_t" | "half" => Some(2),
        "int32_t" | "uint32_t" | "float" | "int" => Some(4),
        "int64_t" | "uint64_t" | "double" => Some(8),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "TVM_DLL int32_t k(void* args, int32_t* arg_type_ids, int32_t num_args, void* out_ret_value, int32_t* out_ret_tcode, void* resource_handle) {\n  void* p0 = (((TVMValue*)args)[0].v_handle);\n  void* T_out = (((TVMValue*)args)[1].v_handle);\n  void* p0_1 = (((DLTensor*)p0)[0].data);\n  void* T_out_1 = (((DLTensor*)T_out)[0].data);\n";

    fn stores(body: &str) -> KernelStores {
        kernel_stores(&format!("{HEAD}{body}\n  return 0;\n}}\n"))
    }

    #[test]
    fn bounds_stores_through_argument_data() {
        let s = stores(
            "  for (int32_t i = 0; i < 49; ++i) {\n    for (int32_t j = 0; j < 10; ++j) {\n      int32_t cse_var_1 = ((i * 10) + j);\n      ((int16_t*)T_out_1)[cse_var_1] = ((int16_t*)p0_1)[cse_var_1];\n    }\n  }",
        );
        assert_eq!((s.bounded, s.skipped), (1, 0));
        assert_eq!(s.writes.get(&1), Some(&980));
        assert_eq!(s.writes.get(&0), None, "a load is not a store");
    }

    #[test]
    fn skips_stores_it_cannot_bound_exactly() {
        for body in [
            "  if (num_args == 2) {\n    ((float*)T_out_1)[3] = 0.0f;\n  }",
            "  if (num_args == 2) ((float*)T_out_1)[3] = 0.0f;",
            "  for (int32_t i = 0; i < num_args; ++i) {\n    ((float*)T_out_1)[i] = 0.0f;\n  }",
            "  for (int32_t i = 0; i < 0; ++i) {\n    ((float*)T_out_1)[i] = 0.0f;\n  }",
            "  for (int32_t i = 0; i < 8; ++i) {\n    if (i == 3) { break; }\n    ((float*)T_out_1)[i] = 0.0f;\n  }",
            "  for (int32_t i = 0; i < 8; ++i) {\n    i = i + 1;\n    ((float*)T_out_1)[i] = 0.0f;\n  }",
            "  for (int32_t i = 0; i < 8; ++i) {\n    ((i)) = 0;\n    ((float*)T_out_1)[i] = 0.0f;\n  }",
            "  for (int32_t i = 0; i < 8; ++i) {\n    int32_t* q = &(i);\n    ((float*)T_out_1)[i] = 0.0f;\n  }",
            "  for (int32_t i = 0; i < 8; ++i) {\n    ++(i);\n    ((float*)T_out_1)[i] = 0.0f;\n  }",
            "  for (int32_t i = 0; i < 8; ++i) {\n    ((float*)T_out_1)[((i * 2) % 2)] = 0.0f;\n  }",
            "  while (1) {\n    ((float*)T_out_1)[7] = 0.0f;\n  }",
            "  return 0;\n  ((float*)T_out_1)[7] = 0.0f;",
            "  ((float4*)T_out_1)[7] = 0.0f;",
        ] {
            let s = stores(body);
            assert_eq!((s.bounded, s.skipped, s.writes.len()), (0, 1, 0), "{body}");
        }
    }

    #[test]
    fn hostile_kernels_do_not_panic() {
        let deep = format!("  ((float*)T_out_1)[{}0{}] = 1;", "(".repeat(50_000), ")".repeat(50_000));
        let huge = "  ((double*)T_out_1)[9223372036854775807] = 1;".to_string();
        let nested = format!("{}  ((float*)T_out_1)[0] = 1;{}", "{".repeat(10_000), "}".repeat(10_000));
        for body in [deep, huge, nested, "}}}}((".into(), "((float*)T_out_1)[".into(), "(((".into()] {
            let _ = stores(&body);
        }
        let s = stores("  ((double*)T_out_1)[9223372036854775807] = 1;");
        assert_eq!((s.bounded, s.skipped), (0, 1), "more bytes than 2^64 give no bound");
        for text in ["", "(", "((int*)x)[", "for (int32_t i = 0; i < 99999999999999999999; ++i) {"] {
            let _ = kernel_stores(text);
        }
    }
}
