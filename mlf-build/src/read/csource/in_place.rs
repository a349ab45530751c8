//! Which tensor arguments of a packed kernel its outputs may overwrite: the proof that lets the
//! graph planner give an operator's output the bytes of an input that dies at that operator.
//!
//! A packed kernel names its arguments' data as `void* p0_1 = (((DLTensor*)p0)[0].data);`
//! (see [`stores`](super::stores)). Argument `b` may overwrite argument `a` when every use of
//! both is understood and one of two proofs holds:
//!
//! - **phases**: every access to `a` lies in top-level statements of the body that all come
//!   before the first top-level statement touching `b` (TVM's convolutions copy their input
//!   into a padded workspace first, then compute the output from the workspace alone);
//! - **element-wise**: every access to `a` and `b` is in one block nested only in constant `for`
//!   loops, all index the same expression, which takes a different value in every iteration
//!   (a linear form of the loops' variables whose coefficients, sorted, each exceed what the
//!   smaller terms span: [`linear`](super::linear)), both are read and
//!   written as elements of one size, and in that block each store to `b` starts its statement
//!   and no load of `a` comes in a statement after the first store to `b` — so element `i` of
//!   `a` is read only in the iteration that writes element `i` of `b`, before it does.
//!
//! Anything else proves nothing: a data pointer or handle used other than by element accesses
//! and `DLTensor` field reads (passed to a call, offset, its address taken), a store to `a`,
//! compound assignments or increments of elements, `goto` or `do`, a top-level control statement
//! without braces, a brace that is not a block, names declared twice or changed. Files that
//! define macros are not read (the caller clears the result).

use std::collections::HashMap;

use super::interval::Binding;
use super::linear::{linear, one_to_one};
use super::stores::{Names, canonical_for, elem_bytes, handle_data, pointer_of};
use super::tokens::{Tok, skip_group};
use crate::model::InPlaceProof;

/// One access to an argument's elements: `((T*)D)[index]`.
struct Access {
    arg: usize,
    store: bool,
    elem: Option<u64>,
    /// The index expression's tokens.
    index: (usize, usize),
    /// Its top-level statement.
    top: usize,
    /// The `{` of its innermost block (`usize::MAX` at the top level).
    block: usize,
    /// Its statement within that block.
    stmt: usize,
    /// Whether it starts its statement (a store `((T*)D)[i] = …;`).
    starts: bool,
    /// Loop variables in scope (name, largest value) and locals in scope (name, tokens), at the
    /// argument's first access only.
    loops: Vec<(String, i64)>,
    locals: Vec<(String, usize, usize)>,
    /// Whether every block around it is a constant `for` loop.
    in_loops: bool,
}

/// A block being walked: its `{`, whether it is a constant loop (with its variable), and the
/// number of statements finished in it.
struct Frame {
    open: usize,
    var: Option<(String, i64)>,
    stmts: usize,
}

/// The pairs `(a, b)` of argument indices such that the kernel whose body is `body` (without its
/// outer braces) may be given the same bytes for arguments `a` (only read) and `b` (written).
pub(super) fn overwritable(body: &[Tok]) -> Vec<InPlaceProof> {
    let banned = |k: &str| matches!(k, "goto" | "do" | "setjmp" | "longjmp" | "asm" | "__asm__");
    if body.iter().any(|t| matches!(t, Tok::Ident(k) if banned(k))) {
        return Vec::new();
    }
    let names = Names::count(body);
    let (handles, data) = arguments(body, &names);
    let Some((accesses, escaped)) = walk(body, &names, &handles, &data) else { return Vec::new() };
    let jumps = body.iter().any(|t| matches!(t, Tok::Ident(k) if k == "break" || k == "continue"));
    let mut by_arg: HashMap<usize, Vec<&Access>> = HashMap::new();
    for a in &accesses {
        by_arg.entry(a.arg).or_default().push(a);
    }
    let mut pairs = Vec::new();
    for (&a, reads) in &by_arg {
        if escaped.contains(&a) || reads.iter().any(|x| x.store) {
            continue;
        }
        for (&b, uses) in &by_arg {
            if a == b || escaped.contains(&b) || !uses.iter().any(|x| x.store) {
                continue;
            }
            if phases(reads, uses) {
                pairs.push(InPlaceProof { read: a, written: b, same_index: false });
            } else if !jumps && element_wise(body, reads, uses) {
                pairs.push(InPlaceProof { read: a, written: b, same_index: true });
            }
        }
    }
    pairs.sort_unstable();
    pairs
}

/// Every access to `a` in a top-level statement before every one touching `b`.
fn phases(reads: &[&Access], uses: &[&Access]) -> bool {
    let last_read = reads.iter().map(|x| x.top).max();
    let first_use = uses.iter().map(|x| x.top).min();
    matches!((last_read, first_use), (Some(r), Some(u)) if r < u)
}

/// The element-wise proof (see the module's documentation).
fn element_wise(body: &[Tok], reads: &[&Access], uses: &[&Access]) -> bool {
    let all: Vec<&&Access> = reads.iter().chain(uses).collect();
    let first = all[0];
    let same = |x: &Access| {
        x.block == first.block
            && x.in_loops
            && x.elem.is_some()
            && x.elem == first.elem
            && body[x.index.0..x.index.1] == body[first.index.0..first.index.1]
    };
    if first.block == usize::MAX || !all.iter().all(|x| same(x)) {
        return false;
    }
    let stores: Vec<&&Access> = uses.iter().filter(|x| x.store).collect();
    if !stores.iter().all(|x| x.starts) {
        return false;
    }
    let first_store = stores.iter().map(|x| x.stmt).min().unwrap_or(0);
    if reads.iter().any(|x| x.stmt > first_store) {
        return false;
    }
    // One element per iteration: the index is a linear form of the loops around it that maps
    // them one to one.
    let lookup = |n: &str| -> Option<Binding> {
        let local = first.locals.iter().rev().find(|l| l.0 == n);
        let mut vars = first.loops.iter().filter(|l| l.0 == n);
        match (local, vars.next(), vars.next()) {
            (Some(l), None, _) => Some(Binding::Expr(l.1, l.2)),
            (None, Some(v), None) => Some(Binding::Var(v.1)),
            _ => None,
        }
    };
    linear(body, first.index.0, first.index.1, &lookup).is_some_and(|f| one_to_one(&f, &first.loops))
}

/// The arguments' handles (`void* p0 = (((TVMValue*)args)[0].v_handle);`) and data pointers
/// (`void* p0_1 = (((DLTensor*)p0)[0].data);`), by name, each declared once and never changed.
fn arguments(body: &[Tok], names: &Names) -> (HashMap<String, usize>, HashMap<String, usize>) {
    let (mut handles, mut data) = (HashMap::new(), HashMap::new());
    let mut args_read = 0;
    for i in 0..body.len() {
        let (Some(Tok::Punct('*')), Some(Tok::Ident(n)), Some(Tok::Punct('='))) =
            (body.get(i), body.get(i + 1), body.get(i + 2))
        else {
            continue;
        };
        if names.decls(n) != 1 || names.changes(n) != 0 {
            continue;
        }
        let Some(semi) = body[i..].iter().position(|t| *t == Tok::Punct(';')).map(|k| i + k) else { continue };
        let rhs = &body[i + 3..semi];
        if let Some(k) = pointer_of(rhs, "TVMValue", "args", "v_handle") {
            handles.insert(n.clone(), k);
            args_read += 1;
        } else if let Some(k) = handle_data(rhs).and_then(|h| handles.get(h)) {
            data.insert(n.clone(), *k);
        }
    }
    // `args` read anywhere else could reach an argument's data by another way.
    if body.iter().filter(|t| matches!(t, Tok::Ident(a) if a == "args")).count() != args_read {
        return (HashMap::new(), HashMap::new());
    }
    (handles, data)
}

/// Walks the body: every access to an argument's data, with the arguments used otherwise
/// (escaped). `None` when the statement structure is not the plain one the proofs assume.
fn walk(
    body: &[Tok],
    names: &Names,
    handles: &HashMap<String, usize>,
    data: &HashMap<String, usize>,
) -> Option<(Vec<Access>, Vec<usize>)> {
    let p = |k: usize| match body.get(k) {
        Some(Tok::Punct(c)) => Some(*c),
        _ => None,
    };
    let mut frames: Vec<Frame> = Vec::new();
    let mut locals: Vec<(String, usize, usize, usize)> = Vec::new();
    let mut pending: Option<(String, i64)> = None;
    let (mut top, mut parens) = (0usize, 0usize);
    let (mut accesses, mut escaped) = (Vec::new(), Vec::new());
    let mut seen = std::collections::HashSet::new();
    let mut i = 0;
    while i < body.len() {
        let at_start = i == 0 || matches!(p(i - 1), Some(';' | '{' | '}'));
        match &body[i] {
            Tok::Punct('(') => parens += 1,
            Tok::Punct(')') => parens = parens.checked_sub(1)?,
            Tok::Punct('{') => {
                // A block: the body of a control statement or a statement of its own, never an
                // initializer.
                let before = i.checked_sub(1).map(|k| &body[k]);
                let block = matches!(before, None | Some(Tok::Punct(')' | ';' | '{' | '}')))
                    || matches!(before, Some(Tok::Ident(k)) if k == "else");
                if !block || parens != 0 {
                    return None;
                }
                frames.push(Frame { open: i, var: pending.take(), stmts: 0 });
            }
            Tok::Punct('}') => {
                frames.pop()?;
                let depth = frames.len();
                locals.retain(|l| l.3 <= depth);
                match frames.last_mut() {
                    Some(f) => f.stmts += 1,
                    None => top += 1,
                }
            }
            Tok::Punct(';') if parens == 0 => match frames.last_mut() {
                Some(f) => f.stmts += 1,
                None => top += 1,
            },
            Tok::Ident(k) if matches!(k.as_str(), "for" | "if" | "while" | "switch" | "else") => {
                let after = if k == "else" { i + 1 } else { skip_group(body, i + 1) };
                let braced = p(after) == Some('{')
                    || (k == "else" && matches!(body.get(after), Some(Tok::Ident(x)) if x == "if"));
                // At the top level a body without braces could hide a block whose end is not
                // the statement's.
                if frames.is_empty() && !braced {
                    return None;
                }
                if k == "for" && p(after) == Some('{') {
                    if let Some((v, n)) = canonical_for(body, i) {
                        if n >= 1 && names.decls(&v) == 1 && names.changes(&v) == 1 {
                            pending = Some((v, n - 1));
                        }
                    }
                }
            }
            Tok::Ident(t) if at_start && matches!(t.as_str(), "int32_t" | "int64_t" | "int") => {
                if let (Some(Tok::Ident(n)), Some('=')) = (body.get(i + 1), p(i + 2)) {
                    let semi = body[i..].iter().position(|t| *t == Tok::Punct(';')).map(|k| i + k)?;
                    if names.decls(n) == 1 && names.changes(n) == 0 {
                        locals.push((n.clone(), i + 3, semi, frames.len()));
                    }
                }
            }
            Tok::Ident(n) => {
                if let Some(&k) = handles.get(n) {
                    if !handle_use(body, i, data) {
                        escaped.push(k);
                    }
                } else if let Some(&k) = data.get(n) {
                    let scope = Scope { frames: &frames, locals: &locals, top };
                    match access(body, i) {
                        Some(found) => accesses.push(scope.access(body, i, k, found, seen.insert(k))),
                        None if is_declaration(body, i) => {}
                        None => escaped.push(k),
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    (frames.is_empty() && parens == 0).then_some((accesses, escaped))
}

/// Where the walk is: the blocks around, the locals in scope, the top-level statement.
struct Scope<'a> {
    frames: &'a [Frame],
    locals: &'a [(String, usize, usize, usize)],
    top: usize,
}

impl Scope<'_> {
    /// The access at `i` to argument `arg` ([`access`]'s findings); `first`: the argument's first
    /// access, the only one whose scope the element-wise proof reads.
    fn access(
        &self,
        body: &[Tok],
        i: usize,
        arg: usize,
        found: (bool, Option<u64>, (usize, usize)),
        first: bool,
    ) -> Access {
        let (store, elem, index) = found;
        let (block, stmt) = self.frames.last().map_or((usize::MAX, self.top), |f| (f.open, f.stmts));
        let starts = i >= 5 && (i == 5 || matches!(body[i - 6], Tok::Punct(';' | '{' | '}')));
        Access {
            arg,
            store,
            elem,
            index,
            top: self.top,
            block,
            stmt,
            starts,
            loops: if first { self.frames.iter().filter_map(|f| f.var.clone()).collect() } else { Vec::new() },
            locals: if first { self.locals.iter().map(|l| (l.0.clone(), l.1, l.2)).collect() } else { Vec::new() },
            in_loops: self.frames.iter().all(|f| f.var.is_some()),
        }
    }
}

/// Whether the handle at `i` is declared or read as `(((DLTensor*)H)[0].field…)` (not written,
/// not taken the address of), its `data` only to declare a data pointer of `data`.
fn handle_use(body: &[Tok], i: usize, data: &HashMap<String, usize>) -> bool {
    if is_declaration(body, i) {
        return true;
    }
    let Some(pre) = i.checked_sub(5).map(|s| &body[s..i]) else { return false };
    let cast = matches!(pre, [Tok::Punct('('), Tok::Punct('('), Tok::Ident(t), Tok::Punct('*'), Tok::Punct(')')] if t == "DLTensor");
    let post = body.get(i + 1..i + 6);
    let index0 = matches!(post, Some([Tok::Punct(')'), Tok::Punct('['), Tok::Number(z), Tok::Punct(']'), Tok::Punct('.')]) if z == "0");
    if !cast || !index0 || matches!(i.checked_sub(6).map(|k| &body[k]), Some(Tok::Punct('&'))) {
        return false;
    }
    // The field chain, then no assignment or increment.
    if body.get(i + 6) == Some(&Tok::Ident("data".into())) {
        let named = i >= 8 && matches!(&body[i - 8], Tok::Ident(d) if data.contains_key(d));
        return named && body[i - 7] == Tok::Punct('=') && body.get(i + 7) == Some(&Tok::Punct(')'));
    }
    let mut k = i + 6;
    while matches!(body.get(k), Some(Tok::Ident(_))) && body.get(k + 1) == Some(&Tok::Punct('.')) {
        k += 2;
    }
    matches!(body.get(k), Some(Tok::Ident(_))) && !changes_at(body, k + 1)
}

/// Whether tokens at `k` assign or step what precedes them (`=`, `op=`, `++`, `--`).
fn changes_at(body: &[Tok], k: usize) -> bool {
    let p = |j: usize| match body.get(j) {
        Some(Tok::Punct(c)) => Some(*c),
        _ => None,
    };
    (p(k) == Some('=') && p(k + 1) != Some('='))
        || (matches!(p(k), Some('+' | '-' | '*' | '/' | '%' | '&' | '|' | '^')) && p(k + 1) == Some('='))
        || (matches!(p(k), Some('<' | '>')) && p(k + 1) == p(k) && p(k + 2) == Some('='))
        || (matches!(p(k), Some('+' | '-')) && p(k + 1) == p(k))
}

/// `void* NAME = …` at `i`: the name's declaration.
fn is_declaration(body: &[Tok], i: usize) -> bool {
    i >= 2
        && body[i - 1] == Tok::Punct('*')
        && body[i - 2] == Tok::Ident("void".into())
        && body.get(i + 1) == Some(&Tok::Punct('='))
}

/// `((T*)D)[index]` around the data pointer at `i`: whether it is a plain store, the element's
/// bytes and the index's tokens. `None` for any other use (an address taken, a compound
/// assignment, an increment, anything but such an access).
fn access(body: &[Tok], i: usize) -> Option<(bool, Option<u64>, (usize, usize))> {
    let pre = body.get(i.checked_sub(5)?..i)?;
    let [Tok::Punct('('), Tok::Punct('('), Tok::Ident(ty), Tok::Punct('*'), Tok::Punct(')')] = pre else {
        return None;
    };
    if body.get(i + 1) != Some(&Tok::Punct(')')) || body.get(i + 2) != Some(&Tok::Punct('[')) {
        return None;
    }
    let before = i.checked_sub(6).map(|k| &body[k]);
    if matches!(before, Some(Tok::Punct('&')))
        || (i >= 7 && matches!(before, Some(Tok::Punct('+' | '-'))) && body[i - 7] == body[i - 6])
    {
        return None;
    }
    let close = skip_group(body, i + 2);
    if close > body.len() || body.get(close - 1) != Some(&Tok::Punct(']')) {
        return None;
    }
    let p = |j: usize| match body.get(j) {
        Some(Tok::Punct(c)) => Some(*c),
        _ => None,
    };
    let store = p(close) == Some('=') && p(close + 1) != Some('=');
    if !store && changes_at(body, close) {
        return None;
    }
    Some((store, elem_bytes(ty), (i + 3, close - 1)))
}

#[cfg(test)]
mod tests {
    use super::overwritable;
    use crate::model::{CFile, InPlaceProof};
    use crate::read::csource::tokens::tokenize;

    const HEAD: &str = "  void* p0 = (((TVMValue*)args)[0].v_handle);\n  void* T_out = (((TVMValue*)args)[1].v_handle);\n  void* p0_1 = (((DLTensor*)p0)[0].data);\n  int32_t dev_id = (((DLTensor*)p0)[0].device.device_id);\n  void* T_out_1 = (((DLTensor*)T_out)[0].data);\n  void* s = (((DLTensor*)T_out)[0].strides);\n";

    fn proofs(body: &str) -> Vec<InPlaceProof> {
        let (toks, _) = tokenize(&format!("{HEAD}{body}\n  return 0;\n"), &mut Vec::new());
        overwritable(&toks)
    }

    const PHASES: &str = "  void* pad = TVMBackendAllocWorkspace(1, dev_id, (uint64_t)64, 0, 16);\n  if (pad == NULL) {\n    return -1;\n  }\n  for (int32_t i = 0; i < 16; ++i) {\n    ((float*)pad)[i] = ((i < 15) ? ((float*)p0_1)[(i + 1)] : 0.0f);\n  }\n  for (int32_t k = 0; k < 16; ++k) {\n    ((float*)T_out_1)[k] = (((float*)pad)[k] * 2.0f);\n  }";
    const ELEMENT_WISE: &str = "  for (int32_t i = 0; i < 49; ++i) {\n    for (int32_t j = 0; j < 10; ++j) {\n      int32_t cse_var_1 = ((i * 10) + j);\n      ((int16_t*)T_out_1)[cse_var_1] = (((int16_t*)p0_1)[cse_var_1] - (int16_t)3);\n    }\n  }";

    #[test]
    fn proves_phases_and_element_wise_kernels() {
        assert_eq!(proofs(PHASES), vec![InPlaceProof { read: 0, written: 1, same_index: false }]);
        assert_eq!(proofs(ELEMENT_WISE), vec![InPlaceProof { read: 0, written: 1, same_index: true }]);
        // Reading the output back after writing it in the same iteration is fine.
        let twice = "  for (int32_t i = 0; i < 8; ++i) {\n    float v = ((float*)p0_1)[i];\n    ((float*)T_out_1)[i] = v;\n    ((float*)T_out_1)[i] = (((float*)T_out_1)[i] + v);\n  }";
        assert_eq!(proofs(twice), vec![InPlaceProof { read: 0, written: 1, same_index: true }]);
    }

    #[test]
    fn proves_nothing_in_doubt() {
        for (why, body) in [
            ("elements of other sizes", ELEMENT_WISE.replace("((int16_t*)p0_1)", "((int8_t*)p0_1)")),
            ("a neighbour read", ELEMENT_WISE.replace("((int16_t*)p0_1)[cse_var_1]", "((int16_t*)p0_1)[(cse_var_1 + 1)]")),
            ("one element in many iterations", ELEMENT_WISE.replace("[cse_var_1]", "[j]")),
            ("a read after the first store", "  for (int32_t i = 0; i < 8; ++i) {\n    ((float*)T_out_1)[i] = 0.0f;\n    ((float*)T_out_1)[i] = ((float*)p0_1)[i];\n  }".into()),
            ("a store not starting its statement", "  for (int32_t i = 0; i < 8; ++i) {\n    float x = ((float*)T_out_1)[i] = ((float*)p0_1)[i];\n  }".into()),
            ("inside an if", "  for (int32_t i = 0; i < 8; ++i) {\n    if (i < 4) {\n      ((float*)T_out_1)[i] = ((float*)p0_1)[i];\n    }\n  }".into()),
            ("a loop of unknown extent", ELEMENT_WISE.replace("i < 49", "i < num_args")),
            ("a break", format!("{ELEMENT_WISE}\n  for (int32_t q = 0; q < 2; ++q) {{\n    break;\n  }}")),
            ("the output first", PHASES.replace("((float*)pad)[k] * 2.0f", "((float*)pad)[k] + ((float*)p0_1)[k]")),
            ("the data pointer passed on", format!("{PHASES}\n  f(p0_1);")),
            ("the data pointer offset", format!("{PHASES}\n  float* q = ((float*)p0_1) + 1;")),
            ("the data read again", format!("{PHASES}\n  float* q = (float*)(((DLTensor*)p0)[0].data);")),
            ("the handle written", format!("{PHASES}\n  (((DLTensor*)p0)[0].data) = 0;")),
            ("args read elsewhere", format!("{PHASES}\n  g(args);")),
            ("a store to the input", format!("{PHASES}\n  ((float*)p0_1)[0] = 1.0f;")),
            ("an element incremented", PHASES.replace("((float*)pad)[i] = ((i < 15)", "((float*)p0_1)[0]++;\n    ((float*)pad)[i] = ((i < 15)")),
            ("a goto", format!("{PHASES}\n  goto end;\n  end:;")),
            ("a loop without braces", PHASES.replace("for (int32_t i = 0; i < 16; ++i) {\n    ((float*)pad)[i] = ((i < 15) ? ((float*)p0_1)[(i + 1)] : 0.0f);\n  }", "for (int32_t i = 0; i < 16; ++i) if (i) { ((float*)pad)[i] = ((float*)p0_1)[i]; } else { ((float*)T_out_1)[i] = 0.0f; }")),
            ("a do loop", "  do {\n    ((float*)T_out_1)[0] = 1.0f;\n  } while (((float*)p0_1)[0] > 0.0f);".into()),
            ("an initializer", format!("  float a[1] = {{((float*)p0_1)[0]}};\n{PHASES}")),
        ] {
            assert_eq!(proofs(&body), vec![], "{why}");
        }
    }

    #[test]
    fn files_with_macros_prove_nothing() {
        let f = format!(
            "TVM_DLL int32_t k(void* args, int32_t* arg_type_ids, int32_t num_args, void* out_ret_value, int32_t* out_ret_tcode, void* resource_handle) {{\n{HEAD}{PHASES}\n  return 0;\n}}\n"
        );
        assert_eq!(CFile::scan(&f).definition("k").unwrap().in_place.len(), 1);
        assert!(CFile::scan(&format!("#define float double\n{f}")).definition("k").unwrap().in_place.is_empty());
    }

    #[test]
    fn hostile_bodies_neither_panic_nor_hang() {
        for text in
            ["", "}", "{", "(((", ")))", "((float*)p0_1)[", "void* p0_1 = (((DLTensor*)p0)[0].data); ((float*)p0_1)[1"]
        {
            let (toks, _) = tokenize(text, &mut Vec::new());
            let _ = overwritable(&toks);
        }
        let deep = format!("{}{}", "for (int32_t i = 0; i < 2; ++i) {".repeat(5000), "}".repeat(5000));
        let _ = proofs(&deep);
    }
}
