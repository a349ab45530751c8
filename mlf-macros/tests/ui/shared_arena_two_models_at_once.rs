// Two models on one shared arena: holding the second while the first lives does not compile
// (each borrows the arena's handle mutably).
mlf_runtime::include_model!("tests/ui/files/fc.kmodel", name = first, arena = detect);
mlf_runtime::include_model!("tests/ui/files/fc.kmodel", name = second, arena = detect);
mlf_runtime::shared_arena!(detect: first, second);

fn main() {
    let mut arena = detect::Arena::take().unwrap();
    let a = first::Model::take(&mut arena).unwrap();
    let b = second::Model::take(&mut arena).unwrap();
    drop((a, b));
}
