//! The relay reader on the relay text of every MLF fixture: it reads, every input the vectors
//! name is a parameter of `@main` with the vectors' shape and dtype, and whatever the text says
//! about the returned value (a printed return type, `ty=` annotations, a final call's
//! `out_dtype`) agrees with the vectors' outputs.

use mlf_build::__private::read::archive::Archive;
use mlf_build::__private::read::relay;
use mlf_fixtures::{Manifest, fixtures_or_skip, mlf_fixtures};

#[test]
fn the_relay_text_of_every_fixture_agrees_with_its_vectors() {
    let Some(root) = fixtures_or_skip("the_relay_text_of_every_fixture_agrees_with_its_vectors") else { return };
    let (mut read, mut with_returns, mut with_dtype) = (0, 0, 0);
    for fx in mlf_fixtures(&root) {
        let archive = Archive::open(&fx.model).unwrap();
        let Some((member, bytes)) = archive.first_of(&["src/default.relay", "src/relay.txt", "relay.txt"]) else {
            eprintln!("{}: no relay text", fx.name);
            continue;
        };
        let text = std::str::from_utf8(bytes).unwrap();
        let m = relay::parse(text).unwrap_or_else(|e| panic!("{} {member}: {e}", fx.name));
        read += 1;
        let Some(manifest) = Manifest::read(&fx.dir) else { continue };
        let case = &manifest.cases[0];
        for input in &case.inputs {
            let name = input.name.as_deref().unwrap();
            let (_, ty) = m.params.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("{}: {name}", fx.name));
            let ty = ty.as_ref().unwrap_or_else(|| panic!("{}: {name} has no type", fx.name));
            assert_eq!(
                (ty.shape.clone(), ty.dtype.to_string()),
                (input.shape.clone(), input.dtype.clone()),
                "{}",
                fx.name
            );
        }
        if let Some(returns) = &m.returns {
            let got: Vec<_> = returns.iter().map(|t| (t.shape.clone(), t.dtype.to_string())).collect();
            let want: Vec<_> = case.outputs.iter().map(|o| (o.shape.clone(), o.dtype.clone())).collect();
            assert_eq!(got, want, "{}: {}", fx.name, m.returns_source);
            with_returns += 1;
        }
        if let Some(d) = m.final_dtype {
            assert_eq!(case.outputs.len(), 1, "{}", fx.name);
            assert_eq!(d.to_string(), case.outputs[0].dtype, "{}", fx.name);
            with_dtype += 1;
        }
    }
    eprintln!("relay text read: {read}; return types: {with_returns}; final out_dtype: {with_dtype}");
    assert!(read >= 15, "only {read} fixtures have relay text");
    assert!(with_returns >= 1 && with_dtype >= 5, "returns {with_returns}, dtypes {with_dtype}");
}

/// The 4-D return type of a requantized classifier, as each of the forms TVM prints it in is
/// spliced into `text` (a fixture's relay text): the printed return type of `@main`, a `ty=`
/// annotation on the final expression, on the binding it names, and on both elements of a tuple.
fn with_4d_returns(text: &str) -> Vec<(&'static str, String, usize)> {
    const TY: &str = "Tensor[(1, 1, 1, 3), uint8]";
    let lines: Vec<&str> = text.lines().collect();
    let def = lines.iter().position(|l| l.starts_with("def @main(")).expect("def @main");
    let end = def + lines[def..].iter().position(|l| l.trim_end() == "}").expect("the end of @main");
    let (sig, last) = (lines[def].trim_end(), lines[end - 1].trim_end());
    assert!(sig.ends_with(" {"), "{sig}");
    // A printed return type already there is replaced.
    let params_end = sig.rfind(") -> ").map_or(sig.len() - 2, |i| i + 1);
    // The final expression annotated (its own trailing comment, if any, replaced).
    let annotated = match last.rfind("/* ") {
        Some(i) if last.ends_with("*/") => format!("{}/* ty={TY} span=Identity:0:0 */", &last[..i]),
        _ => format!("{last} /* ty={TY} */"),
    };
    // The other forms are spliced into the text without a printed return type (it would answer first).
    let splice = |at: usize, with: &str| {
        let mut l: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        l[def] = format!("{} {{", &sig[..params_end]);
        l[at] = with.to_string();
        l.join("\n") + "\n"
    };
    let bound = |tail: &str| splice(end - 1, &format!("  %900 = {};\n  {tail}", annotated.trim_start()));
    vec![
        ("printed return type", splice(def, &format!("{} -> {TY} {{", &sig[..params_end])), 1),
        ("final expression", splice(end - 1, &annotated), 1),
        ("binding", bound("%900"), 1),
        ("tuple", bound("(%900, %900)"), 2),
    ]
}

#[test]
fn a_4d_return_type_in_every_form_on_every_fixtures_relay_text() {
    let Some(root) = fixtures_or_skip("a_4d_return_type_in_every_form_on_every_fixtures_relay_text") else { return };
    let mut read = 0;
    for fx in mlf_fixtures(&root) {
        let archive = Archive::open(&fx.model).unwrap();
        let Some((_, bytes)) = archive.first_of(&["src/default.relay", "src/relay.txt", "relay.txt"]) else { continue };
        for (form, text, n) in with_4d_returns(std::str::from_utf8(bytes).unwrap()) {
            let m = relay::parse(&text).unwrap_or_else(|e| panic!("{} ({form}): {e}", fx.name));
            let got: Vec<_> = m.returns.iter().flatten().map(|t| (t.shape.clone(), t.dtype.to_string())).collect();
            assert_eq!(
                got,
                vec![(vec![1, 1, 1, 3], "uint8".to_string()); n],
                "{} ({form}): {}",
                fx.name,
                m.returns_source
            );
            assert!(!m.params.is_empty(), "{} ({form})", fx.name);
        }
        read += 1;
    }
    assert!(read >= 15, "only {read} fixtures have relay text");
}
