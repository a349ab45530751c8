//! How far a function of an AOT USMP build reaches into each pool it takes: every access
//! `((T*)LET)[index]` through a pointer bound into a pool (`void* LET = (&(POOL[OFFSET]));`) and
//! every `POOL[index]`, loads and stores alike, wherever they stand, its index bounded by the
//! interval evaluator that bounds graph kernels' stores ([`interval`](super::interval), as a hull:
//! bounds that hold, for holding the access to the pool's size): loop
//! variables of `for (int32_t v = 0; v < N; ++v)`, locals standing for an expression, constants.
//! An access whose index the evaluator cannot bound, or through a pointer bound twice or
//! changed, is counted as unbounded; one whose index can be negative as below the pool.

use std::collections::{BTreeMap, HashMap};

use super::guards::{Guard, guards};
use super::interval::{Binding, hull};
use super::pool_lets::pool_lets;
use super::stores::{Names, canonical_for, elem_bytes};
use super::tokens::{Tok, skip_group, tokenize};

/// What a function touches in its pools.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PoolReach {
    /// Per pool (the function's parameter name): the end of the furthest access, in bytes from
    /// the pool's start.
    pub reach: BTreeMap<String, u64>,
    /// Per pool: accesses given no bound.
    pub unbounded: BTreeMap<String, usize>,
    /// Per pool: accesses whose index can be negative.
    pub below: BTreeMap<String, usize>,
}

/// What the function definition `text` touches in the pools named `pools` (its parameters).
pub fn pool_reach(text: &str, pools: &[&str]) -> PoolReach {
    let (toks, _) = tokenize(text, &mut Vec::new());
    let names = Names::count(&toks);
    let once = |n: &str| names.decls(n) == 1 && names.changes(n) == 0;
    // Pointers into pools: local → (pool, offset); `None` when it cannot be followed.
    let mut lets: HashMap<String, Option<(String, u64)>> = HashMap::new();
    for l in pool_lets(text).into_iter().filter(|l| pools.contains(&l.pool.as_str())) {
        let follow = once(&l.local) && !lets.contains_key(&l.local);
        lets.insert(l.local.clone(), follow.then(|| (l.pool.clone(), l.offset)));
    }
    let scope = Scope::of(&toks, &names);
    let mut guarded = Guarded::new(&toks);
    let mut out = PoolReach::default();
    for (pool, offset) in lets.values().flatten() {
        let r = out.reach.entry(pool.clone()).or_default();
        *r = (*r).max(*offset);
    }
    for i in 0..toks.len() {
        // `((T*)NAME)[` or `POOL[`: the pool, the offset, the element's bytes, where `[` is.
        let access = match (&toks[i], toks.get(i + 1)) {
            // `(&(POOL[K]))` binds a pointer (followed through its uses above), it reads nothing.
            (Tok::Ident(p), Some(Tok::Punct('[')))
                if pools.contains(&p.as_str())
                    && !(i >= 2 && toks[i - 1] == Tok::Punct('(') && toks[i - 2] == Tok::Punct('&')) =>
            {
                Some((Some((p.clone(), 0)), Some(1), i + 1))
            }
            (Tok::Punct('('), _) => cast_access(&toks, i).and_then(|(ty, name)| {
                let target = match lets.get(name) {
                    Some(t) => t.clone(),
                    None if pools.contains(&name) => Some((name.to_string(), 0)),
                    None => return None,
                };
                Some((target, elem_bytes(ty), i + 7))
            }),
            _ => None,
        };
        let Some((target, elem, open)) = access else { continue };
        let close = skip_group(&toks, open);
        let Some((pool, offset)) = target else {
            // A pointer bound twice or changed: its pool is not known, so every pool counts it.
            for p in pools {
                *out.unbounded.entry(p.to_string()).or_default() += 1;
            }
            continue;
        };
        guarded.at(open);
        let lookup = |n: &str| guarded.lookup(&scope, n);
        let range = elem.and_then(|e| Some((hull(&toks, open + 1, close.checked_sub(1)?, &lookup)?, e)));
        let end = range.and_then(|(r, e)| {
            let count = u64::try_from(r.hi).ok()?.checked_add(1)?;
            Some((r.lo < 0, offset.checked_add(count.checked_mul(e)?)?))
        });
        match end {
            Some((true, _)) => *out.below.entry(pool).or_default() += 1,
            Some((false, end)) => {
                let r = out.reach.entry(pool).or_default();
                *r = (*r).max(end);
            }
            None => *out.unbounded.entry(pool).or_default() += 1,
        }
    }
    out
}

/// Loop variables and locals standing for an expression, as the evaluator looks them up: each
/// declared once and never changed (a loop variable but by its `++v`).
struct Scope {
    loops: HashMap<String, Option<i64>>,
    locals: HashMap<String, Option<(usize, usize)>>,
}

impl Scope {
    fn of(toks: &[Tok], names: &Names) -> Scope {
        let once = |n: &str| names.decls(n) == 1 && names.changes(n) == 0;
        let mut loops: HashMap<String, Option<i64>> = HashMap::new();
        let mut locals: HashMap<String, Option<(usize, usize)>> = HashMap::new();
        for i in 0..toks.len() {
            match &toks[i] {
                Tok::Ident(k) if k == "for" => {
                    if let Some((v, n)) = canonical_for(toks, i) {
                        let ok = n >= 1 && names.decls(&v) == 1 && names.changes(&v) == 1 && !loops.contains_key(&v);
                        loops.insert(v, ok.then_some(n - 1));
                    }
                }
                Tok::Ident(t)
                    if matches!(t.as_str(), "int32_t" | "int64_t" | "int")
                        && i > 0
                        && toks[i - 1] != Tok::Punct('(') =>
                {
                    if let (Some(Tok::Ident(n)), Some(Tok::Punct('='))) = (toks.get(i + 1), toks.get(i + 2)) {
                        let semi = toks[i + 2..].iter().position(|t| *t == Tok::Punct(';')).map(|k| i + 2 + k);
                        let ok = once(n) && !locals.contains_key(n);
                        locals.insert(n.clone(), semi.filter(|_| ok).map(|s| (i + 3, s)));
                    }
                }
                _ => {}
            }
        }
        Scope { loops, locals }
    }

    fn lookup(&self, n: &str) -> Option<Binding> {
        match (self.locals.get(n), self.loops.get(n)) {
            (Some(Some((s, e))), None) => Some(Binding::Expr(*s, *e)),
            (None, Some(Some(hi))) => Some(Binding::Var(*hi)),
            _ => None,
        }
    }
}

/// The guards ([`guards`]) that hold at a place, for places visited in order.
struct Guarded {
    all: Vec<Guard>,
    next: usize,
    active: Vec<usize>,
}

/// Most guards followed at once (more, deeper ones are left out: a weaker bound, never a wrong one).
const MAX_ACTIVE_GUARDS: usize = 256;

impl Guarded {
    fn new(toks: &[Tok]) -> Guarded {
        Guarded { all: guards(toks), next: 0, active: Vec::new() }
    }

    /// Moves to token `at` (never before the last place).
    fn at(&mut self, at: usize) {
        while self.next < self.all.len() && self.all[self.next].start <= at {
            if self.active.len() < MAX_ACTIVE_GUARDS {
                self.active.push(self.next);
            }
            self.next += 1;
        }
        let all = &self.all;
        self.active.retain(|&g| all[g].end > at);
    }

    /// What `n` stands for here: its binding in `scope`, narrowed by the guards that hold.
    fn lookup(&self, scope: &Scope, n: &str) -> Option<Binding> {
        let base = scope.lookup(n)?;
        let (mut lo, mut hi) = (None::<i64>, None::<i64>);
        for g in self.active.iter().map(|&g| &self.all[g]).filter(|g| g.name == n) {
            if let Some(l) = g.lo {
                lo = Some(lo.map_or(l, |x| x.max(l)));
            }
            if let Some(h) = g.hi {
                hi = Some(hi.map_or(h, |x| x.min(h)));
            }
        }
        Some(match (base, lo, hi) {
            (b, None, None) => b,
            (Binding::Var(top), lo, hi) => Binding::Between(lo.unwrap_or(0).max(0), hi.unwrap_or(top).min(top)),
            (Binding::Between(a, b), lo, hi) => Binding::Between(lo.unwrap_or(a).max(a), hi.unwrap_or(b).min(b)),
            (Binding::Expr(..), Some(lo), Some(hi)) => Binding::Between(lo, hi),
            (b, _, _) => b,
        })
    }
}

/// How far the function definition `text` reaches through its pointer parameter `param` (whose
/// element has `declared` bytes, `None` for `void*`): the lowest byte (negative: before the
/// pointer, as padding kernels index under a guard) and the end of the furthest access, every
/// access `param[index]` or `((T*)param)[index]` bounded as in [`pool_reach`]. `None` when an
/// access cannot be bounded or the parameter is used any other way (passed on, copied, offset),
/// which would take the reach out of sight.
pub fn param_reach(text: &str, param: &str, declared: Option<u64>) -> Option<(i64, u64)> {
    let (toks, _) = tokenize(text, &mut Vec::new());
    let body = toks.iter().position(|t| *t == Tok::Punct('{'))?;
    let names = Names::count(&toks);
    let scope = Scope::of(&toks, &names);
    let mut guarded = Guarded::new(&toks);
    let (mut low, mut reach) = (0i64, 0u64);
    for i in body..toks.len() {
        if toks[i] != Tok::Ident(param.to_string()) {
            continue;
        }
        let (elem, open) = if toks.get(i + 1) == Some(&Tok::Punct('[')) {
            (declared, i + 1)
        } else {
            let ty = i.checked_sub(5).and_then(|s| cast_access(&toks, s)).filter(|(_, n)| *n == param);
            (elem_bytes(ty?.0), i + 2)
        };
        let close = skip_group(&toks, open);
        guarded.at(open);
        let lookup = |n: &str| guarded.lookup(&scope, n);
        let r = hull(&toks, open + 1, close.checked_sub(1)?, &lookup)?;
        let elem = elem?;
        low = low.min(r.lo.checked_mul(i64::try_from(elem).ok()?)?);
        let end = u64::try_from(r.hi.max(0)).ok()?.checked_add(1)?.checked_mul(elem)?;
        reach = reach.max(end);
    }
    Some((low, reach))
}

/// `((T*)NAME)[` at `i`: `T` and `NAME`.
fn cast_access(toks: &[Tok], i: usize) -> Option<(&str, &str)> {
    let t = toks.get(i..i + 8)?;
    match t {
        [
            Tok::Punct('('),
            Tok::Punct('('),
            Tok::Ident(ty),
            Tok::Punct('*'),
            Tok::Punct(')'),
            Tok::Ident(name),
            Tok::Punct(')'),
            Tok::Punct('['),
        ] => Some((ty, name)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POOLS: &[&str] = &["global_const_workspace_4_var", "global_workspace_5_var"];

    fn reach(body: &str) -> PoolReach {
        pool_reach(
            &format!(
                "int32_t k(float* p0, uint8_t* global_const_workspace_4_var, uint8_t* global_workspace_5_var) {{\n{body}\n  return 0;\n}}\n"
            ),
            POOLS,
        )
    }

    #[test]
    fn the_furthest_access_into_each_pool_loads_and_stores_alike() {
        let r = reach(
            "  void* c_let = (&(global_const_workspace_4_var[8192]));\n  for (int32_t o = 0; o < 2; ++o) {\n    void* w_let = (&(global_workspace_5_var[176]));\n    for (int32_t x = 0; x < 5; ++x) {\n      if (p0[x] > 0.0f) {\n        ((float*)w_let)[x] = ((float*)c_let)[((o * 160) + x)];\n      }\n    }\n  }\n  global_workspace_5_var[3] = 0;",
        );
        assert_eq!(r.reach.get("global_workspace_5_var"), Some(&196));
        assert_eq!(r.reach.get("global_const_workspace_4_var"), Some(&(8192 + 165 * 4)));
        assert!(r.unbounded.is_empty() && r.below.is_empty(), "{r:?}");
    }

    #[test]
    fn what_cannot_be_bounded_is_counted() {
        for body in [
            "  void* w_let = (&(global_workspace_5_var[0]));\n  for (int32_t i = 0; i < 8; ++i) {\n    ((float*)w_let)[(i + n)] = 0.0f;\n  }",
            "  void* w_let = (&(global_workspace_5_var[0]));\n  ((float*)w_let)[p0[0]] = 0.0f;",
            "  void* w_let = (&(global_workspace_5_var[0]));\n  w_let = p0;\n  ((float*)w_let)[0] = 0.0f;",
            "  void* w_let = (&(global_workspace_5_var[0]));\n  ((float4*)w_let)[0] = 0.0f;",
        ] {
            let r = reach(body);
            assert_eq!(r.unbounded.get("global_workspace_5_var"), Some(&1), "{body}: {r:?}");
        }
        let r = reach(
            "  void* w_let = (&(global_workspace_5_var[0]));\n  for (int32_t i = 0; i < 8; ++i) {\n    ((float*)w_let)[(i - 4)] = 0.0f;\n  }",
        );
        assert_eq!(r.below.get("global_workspace_5_var"), Some(&1), "{r:?}");
    }

    #[test]
    fn a_parameters_reach_counts_every_access_and_gives_up_when_it_escapes() {
        let k = |body: &str| format!("int32_t k(float* p0, float* out) {{\n{body}\n  return 0;\n}}\n");
        let r = param_reach(
            &k(
                "  for (int32_t i = 0; i < 10; ++i) {\n    out[i] = ((i < 1) ? 0.0f : p0[(i - 1)]);\n    ((int8_t*)p0)[(i + 50)] = 0;\n  }",
            ),
            "p0",
            Some(4),
        );
        assert_eq!(r, Some((-4, 60)));
        assert_eq!(param_reach(&k("  out[0] = 1.0f;"), "p0", Some(4)), Some((0, 0)));
        for body in ["  float* q = p0;\n  q[3] = 0;", "  g(p0);", "  p0[n] = 0;"] {
            assert_eq!(param_reach(&k(body), "p0", Some(4)), None, "{body}");
        }
    }
}
