//! The Relay text (`relay.txt`, `src/relay.txt`, `src/<m>.relay`): the `def @main(…)` signature
//! — parameter names and types, `output_tensor_names`, the return type when printed — and what
//! the body says about the value it returns (`/* ty=… */` annotations, a final call's
//! `out_dtype`).
//!
//! Every form TVM printed is read: types after `:` or only in a `/* ty=… */` comment, names with
//! `:` and `.` in them, attributes with nested values and quoted strings (`virtual_device=…`,
//! `executor=meta[Executor][0]`), tuple return types to any depth, scalar types (`float32`), and
//! a return value that is a call, a variable bound earlier, or a tuple of either. Anything else
//! reads as "not recorded", never as an error; only a type that cannot run (a dynamic dimension,
//! an unknown dtype) is refused.
//!
//! The reader is linear in the length of the text and never recurses (nesting is counted), so
//! no input can exhaust the stack: one lexer pass (`lex`), one pass over the signature, one
//! over the body.

mod body;
mod lex;
mod types;

pub use types::TensorType;

use lex::{Tok, lex};

use crate::error::{Error, Result};
use crate::support::dtype::DType;

/// The parsed signature.
#[derive(Clone, Debug, Default)]
pub struct RelayMain {
    /// Parameters in order: raw name and type (when it is a tensor type).
    pub params: Vec<(String, Option<TensorType>)>,
    /// `output_tensor_names=[…]`, when present.
    pub output_names: Option<Vec<String>>,
    /// The returned tensors, flattened: the printed return type (`-> …`), else the annotations
    /// of the value the body returns.
    pub returns: Option<Vec<TensorType>>,
    /// Where `returns` was read (`the return type of @main`, `the ty= annotation of …`).
    pub returns_source: String,
    /// The `out_dtype="…"` / `dtype="…"` attribute of the final call (e.g.
    /// `qnn.quantize(…, out_dtype="int8")`), when it has one.
    pub final_dtype: Option<DType>,
}

/// Parses the `@main` signature and what its body returns out of relay text.
pub fn parse(text: &str) -> Result<RelayMain> {
    let toks = lex(text);
    let open = toks
        .windows(3)
        .position(|w| w == [Tok::Word("def"), Tok::Word("@main"), Tok::Punct(b'(')])
        .map(|p| p + 2)
        .ok_or_else(|| Error::missing("`def @main(` signature"))?;
    let mut out = RelayMain::default();
    let close = signature(&toks, open, &mut out)?;
    let mut i = skip_comments(&toks, close + 1);
    if toks.get(i) == Some(&Tok::Arrow) {
        let start = i + 1;
        i = (start..toks.len()).find(|&k| toks[k] == Tok::Punct(b'{')).unwrap_or(toks.len());
        let ty: Vec<Tok<'_>> = toks[start..i].iter().copied().filter(|t| !matches!(t, Tok::Comment(_))).collect();
        out.returns = types::flatten(&ty).map_err(|e| e.at("return type of @main"))?;
        out.returns_source = "the return type of @main".into();
    }
    if toks.get(i) == Some(&Tok::Punct(b'{')) {
        let r = body::returned(&toks, i).map_err(|e| e.at("the body of @main"))?;
        out.final_dtype = r.call_dtype;
        if out.returns.is_none() {
            out.returns = r.types;
            out.returns_source = r.source;
        }
    }
    if out.returns.is_none() {
        out.returns_source.clear();
    }
    Ok(out)
}

/// The index after the comments starting at `i`.
fn skip_comments(toks: &[Tok<'_>], mut i: usize) -> usize {
    while matches!(toks.get(i), Some(Tok::Comment(_))) {
        i += 1;
    }
    i
}

/// Reads the parameter list opened at `toks[open]` into `out`; returns the index of its `)`.
fn signature(toks: &[Tok<'_>], open: usize, out: &mut RelayMain) -> Result<usize> {
    let mut depth = 0usize;
    let mut start = open + 1;
    for i in open + 1..toks.len() {
        let t = toks[i];
        let ends = depth == 0 && (t == Tok::Punct(b',') || t.closes());
        if ends {
            item(&toks[start..i], out)?;
            if t.closes() {
                return Ok(i);
            }
            start = i + 1;
        } else if t.opens() {
            depth += 1;
        } else if t.closes() {
            depth -= 1;
        }
    }
    Err(Error::invalid("unterminated parameter list of @main"))
}

/// One item of the parameter list: `%name[: type] [/* ty=… */]` or an attribute `key=value`.
fn item(toks: &[Tok<'_>], out: &mut RelayMain) -> Result<()> {
    let code: Vec<Tok<'_>> = toks.iter().copied().filter(|t| !matches!(t, Tok::Comment(_))).collect();
    match code.as_slice() {
        [Tok::Word(w), rest @ ..] if w.starts_with('%') => {
            let (name, rest) = match (*w, rest) {
                ("%", [Tok::Str(quoted), rest @ ..]) => (*quoted, rest),
                _ => (&w[1..], rest),
            };
            let at = || format!("@main parameter {} (%{name})", out.params.len());
            let written = match rest {
                [Tok::Punct(b':'), ty @ ..] => types::flatten(ty).map_err(|e| e.at(at()))?,
                _ => None,
            };
            let annotated = || -> Result<Option<Vec<TensorType>>> {
                for t in toks {
                    if let Tok::Comment(c) = t {
                        if let Some(ty) = types::of_comment(c).map_err(|e| e.at(at()))? {
                            return Ok(Some(ty));
                        }
                    }
                }
                Ok(None)
            };
            let ty = match written {
                Some(ty) => Some(ty),
                None => annotated()?,
            };
            // A tensor parameter has exactly one tensor; a tuple-typed parameter is not one.
            let ty = ty.filter(|t| t.len() == 1).and_then(|mut t| t.pop());
            out.params.push((name.to_string(), ty));
        }
        [Tok::Word("output_tensor_names"), Tok::Punct(b'='), value @ ..] => {
            out.output_names = Some(string_list(value)?);
        }
        _ => {}
    }
    Ok(())
}

/// `["a", "b"]`.
fn string_list(toks: &[Tok<'_>]) -> Result<Vec<String>> {
    let bad = || Error::invalid("output_tensor_names: expected a list of strings [\"…\", …]");
    let [Tok::Punct(b'['), inner @ .., Tok::Punct(b']')] = toks else { return Err(bad()) };
    let mut names = Vec::new();
    for (k, t) in inner.iter().enumerate() {
        match (k % 2, t) {
            (0, Tok::Str(s)) => names.push(s.to_string()),
            (1, Tok::Punct(b',')) => {}
            _ => return Err(bad()),
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_signature_with_comments_and_names() {
        let text = r#"def @main(%serving_default_input_1:0: Tensor[(1, 5), int8] /* ty=Tensor[(1, 5), int8] span=a:0:0 */, %v_param_1: Tensor[(16), float32], output_tensor_names=["Identity"]) -> Tensor[(1, 10), float32] {
  %0 = foo(%x) /* ty=Tensor[(1), int8] */;
  %0
}"#;
        let m = parse(text).unwrap();
        assert_eq!(m.params.len(), 2);
        assert_eq!(m.params[0].0, "serving_default_input_1:0");
        assert_eq!(m.params[0].1.as_ref().unwrap().shape, vec![1, 5]);
        assert_eq!(m.params[1].1.as_ref().unwrap().shape, vec![16]);
        assert_eq!(m.output_names.as_deref(), Some(&["Identity".to_string()][..]));
        assert_eq!(m.returns.as_ref().unwrap()[0].shape, vec![1, 10]);
    }

    #[test]
    fn final_ty_comment_and_tuple() {
        let text = "def @main(%a: Tensor[(), float32]) {\n  %0 = f(%a);\n  (%0, %0) /* ty=(Tensor[(1, 4), float32], Tensor[(1, 4), int8]) span=x */\n}\n";
        let m = parse(text).unwrap();
        assert_eq!(m.final_dtype, None);
        assert_eq!(m.params[0].1.as_ref().unwrap().shape, Vec::<u64>::new());
        let r = m.returns.unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[1].dtype, DType::I8);
    }

    #[test]
    fn final_out_dtype() {
        let m = parse("def @main(%a: Tensor[(1, 4), int8]) {\n  %0 = f(%a);\n  qnn.quantize(%0, 0.1f, -128, out_dtype=\"int8\")\n}\n").unwrap();
        assert_eq!(m.final_dtype, Some(DType::I8));
    }

    #[test]
    fn dynamic_dimension_is_refused() {
        assert!(parse("def @main(%a: Tensor[(?, 4), float32]) {\n}\n").is_err());
    }

    fn shapes(m: &RelayMain) -> Vec<(Vec<u64>, String)> {
        m.returns.iter().flatten().map(|t| (t.shape.clone(), t.dtype.to_string())).collect()
    }

    #[test]
    fn a_requantized_4d_return_in_every_spelling() {
        let want = vec![(vec![1, 1, 1, 3], "uint8".to_string())];
        let call = "qnn.requantize(%1, meta[relay.Constant][0] /* ty=Tensor[(1), float32] */, 0 /* ty=int32 */, 0.0039f /* ty=float32 */, -128 /* ty=int32 */, axis=3, out_dtype=\"uint8\")";
        for text in [
            // The printed return type, with the body's own annotations.
            format!("def @main(%x: Tensor[(1, 96, 96, 1), int8]) -> Tensor[(1, 1, 1, 3), uint8] {{\n  {call}\n}}\n"),
            // Only the final expression's annotation, after a nested call.
            format!(
                "def @main(%x: Tensor[(1, 96, 96, 1), int8]) {{\n  %1 = nn.conv2d(%x, meta[relay.Constant][1] /* ty=Tensor[(3), int8] */) /* ty=Tensor[(1, 1, 1, 3), int32] */;\n  {call} /* ty=Tensor[(1, 1, 1, 3), uint8] span=StatefulPartitionedCall:0:0 */\n}}\n"
            ),
            // The final expression names a binding.
            format!(
                "def @main(%x: Tensor[(1, 96, 96, 1), int8]) {{\n  %2 = {call} /* ty=Tensor[(1, 1, 1, 3), uint8] */;\n  %3 = %2;\n  %3\n}}\n"
            ),
            // A let binding with a type, CRLF line ends, attributes with quotes and brackets.
            format!(
                "#[version = \"0.0.5\"]\r\ndef @main(%x /* ty=Tensor[(1, 96, 96, 1), int8] */, virtual_device=VirtualDevice(device_type=1, target=Target(kind='c', keys={{'arm_cpu', 'cpu'}}, attrs={{'mcpu': \"cortex-m55\"}})), executor=meta[Executor][0], hash=\"0a)b\") {{\r\n  let %y: Tensor[(1, 1, 1, 3), uint8] /* ty=Tensor[(1, 1, 1, 3), uint8] */ = {call};\r\n  %y\r\n}}\r\n"
            ),
        ] {
            let m = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(shapes(&m), want, "{text}");
            assert_eq!(m.final_dtype, Some(DType::U8), "{text}");
            assert_eq!(m.params[0].1.as_ref().map(|t| t.shape.clone()), Some(vec![1, 96, 96, 1]), "{text}");
            assert!(!m.returns_source.is_empty());
        }
    }

    #[test]
    fn tuples_of_bindings_and_nested_return_tuples() {
        let text = "def @main(%a: Tensor[(1, 16), float32]) {\n  %5 = nn.relu(%a) /* ty=Tensor[(1, 16), float32] */;\n  %6 = cast(%a, dtype=\"int8\") /* ty=Tensor[(1, 16), int8] */;\n  (%5, %6)\n}\n";
        let m = parse(text).unwrap();
        assert_eq!(shapes(&m), vec![(vec![1, 16], "float32".into()), (vec![1, 16], "int8".into())]);
        assert!(m.returns_source.contains("tuple"), "{}", m.returns_source);
        // Without annotations on the elements nothing is known.
        let m = parse("def @main(%a: Tensor[(1), int8]) {\n  %5 = f(%a);\n  (%5, g(%a))\n}\n").unwrap();
        assert!(m.returns.is_none() && m.returns_source.is_empty());
        let m =
            parse("def @main(%a: float32) -> ((Tensor[(2), int8], float32), Tensor[(1, 3), uint8]) {\n  f(%a)\n}\n")
                .unwrap();
        assert_eq!(m.returns.unwrap().len(), 3);
        assert_eq!(m.params[0].1.as_ref().unwrap().shape, Vec::<u64>::new());
    }

    #[test]
    fn unknown_forms_read_as_not_recorded() {
        let m = parse("def @main(%a: meta[relay.TensorType][0], %b: (Tensor[(1), int8], int8)) -> meta[relay.TupleType][0] {\n  %a\n}\n").unwrap();
        assert_eq!(m.params.len(), 2);
        assert!(m.params.iter().all(|(_, t)| t.is_none()));
        assert!(m.returns.is_none());
        assert!(parse("def @mainx(").is_err());
        assert!(parse("def @main(%a: Tensor[(1), int8]").is_err());
        assert!(parse("def @main(output_tensor_names=[1])").is_err());
        // A body that never ends: the signature still reads.
        assert_eq!(parse("def @main(%a: Tensor[(1), int8]) { f(%a").unwrap().params.len(), 1);
    }

    #[test]
    fn deep_nesting_neither_recurses_nor_fails() {
        let n = 100_000;
        let open = "(".repeat(n);
        let close = ")".repeat(n);
        let text =
            format!("def @main(%a: Tensor[(1), int8], x={open}{close}) {{\n  %0 = f({open}%a{close});\n  %0\n}}\n");
        let m = parse(&text).unwrap();
        assert_eq!(m.params.len(), 1);
        assert!(m.returns.is_none());
        let text = format!("def @main(%a: Tensor[(1), int8]) -> {open}float32{close} {{\n}}\n");
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.contains("deeper than 64"), "{e}");
    }
}
