//! Kmodels need no build step (`include_model!` reads them); this writes, per program, the
//! `include_model!` line and the reference vectors of its fixture into `OUT_DIR/<module>.rs`.
//! An absent fixture makes only its program fail to compile, naming it.

/// (fixture folder, kmodel file, module name).
const MODELS: [(&str, &str, &str); 3] = [
    ("kmodel/v3-iris", "iris.kmodel", "iris_v3"),
    ("kmodel/v4-iris", "iris.kmodel", "iris_v4"),
    ("kmodel/v4-20classes-yolo", "yolo.kmodel", "yolo_v4"),
];

fn main() {
    for (rel, file, name) in MODELS {
        let out = format!("{name}.rs");
        match device_vectors::fixture(rel) {
            Ok(dir) => {
                let model = dir.join(file).canonicalize().expect("the kmodel");
                device_vectors::Program::new(&model, name).cases(&dir, usize::MAX).write(&out);
            }
            Err(why) => device_vectors::missing(&out, &why),
        }
    }
}
