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
