//! Where a function of an AOT USMP build puts its tensors in a pool: TVM binds each one as
//! `void* sid_3_let = (&(global_workspace_1_var[32000]));` (the main's intermediates) or
//! `void* pad_temp_let = (&(global_workspace_5_var[16000]));` (a kernel's own scratch). The C
//! says where each starts in the pool, not how many bytes it takes. One pass over the lines.

/// One pointer into a pool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolLet {
    /// The local it is bound to (`sid_3_let`).
    pub local: String,
    /// The pool it points into (the function's parameter, `global_workspace_1_var`).
    pub pool: String,
    /// Its byte offset in the pool.
    pub offset: u64,
}

/// Every `void* NAME = (&(POOL[OFFSET]));` line of `body` (a function's text).
pub fn pool_lets(body: &str) -> Vec<PoolLet> {
    body.lines().filter_map(|l| one(l.trim())).collect()
}

fn one(line: &str) -> Option<PoolLet> {
    let rest = line.strip_prefix("void*")?.trim_start();
    let (local, rest) = rest.split_once('=')?;
    let rest = rest.trim().strip_prefix("(&(")?.strip_suffix("]));")?;
    let (pool, offset) = rest.split_once('[')?;
    let ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let (local, pool) = (local.trim(), pool.trim());
    if !ident(local) || !ident(pool) {
        return None;
    }
    Some(PoolLet { local: local.to_string(), pool: pool.to_string(), offset: offset.trim().parse().ok()? })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lets_into_a_pool() {
        let body = "{\n  void* sid_6_let = (&(global_workspace_1_var[0]));\n  void* sid_5_let = (&(global_workspace_1_var[32000]));\n  void* x = (&(a[-1]));\n  void* y = (&(a[1 + 2]));\n  int32_t z = 0;\n  if (f(sid_6_let) != 0 ) return -1;\n}";
        assert_eq!(
            pool_lets(body),
            vec![
                PoolLet { local: "sid_6_let".into(), pool: "global_workspace_1_var".into(), offset: 0 },
                PoolLet { local: "sid_5_let".into(), pool: "global_workspace_1_var".into(), offset: 32000 },
            ]
        );
    }
}
