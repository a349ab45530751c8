// Two models on one shared arena, one after the other: the arena is the larger part, and each
// model runs while it holds the arena.
mlf_runtime::include_model!("tests/ui/files/fc.kmodel", name = first, arena = detect);
mlf_runtime::include_model!("tests/ui/files/fc.kmodel", name = second, arena = detect);
mlf_runtime::shared_arena!(detect: first, second);

fn main() {
    assert_eq!(detect::BYTES, first::SHARED_ARENA_BYTES.max(second::SHARED_ARENA_BYTES));
    assert_eq!(detect::PARTS.len(), 2);
    let mut arena = detect::Arena::take().unwrap();
    assert!(detect::Arena::take().is_none(), "one handle");
    let input = [0.5f32; first::INPUT_SHAPE[1]];
    let a = {
        let mut m = first::Model::take(&mut arena).unwrap();
        m.run(&first::Inputs { input: &input }).unwrap().output.to_vec()
    };
    let b = {
        let mut m = second::Model::take(&mut arena).unwrap();
        m.run(&second::Inputs { input: &input }).unwrap().output.to_vec()
    };
    assert_eq!(a, b, "one model file, one answer, whichever module ran it");
}
