//! Where a model's parameters live at run time.

/// How external parameters are held at run time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Placement {
    /// All loaded once (`Model::load`) into a static region sized at build time.
    #[default]
    Resident,
    /// Each operator's parameters read just before it runs into a staging buffer sized at build
    /// time to the largest operator's need.
    Streamed,
}

impl Placement {
    /// Every placement.
    pub const ALL: [Placement; 2] = [Placement::Resident, Placement::Streamed];

    /// `resident` or `streamed`.
    pub fn name(self) -> &'static str {
        match self {
            Placement::Resident => "resident",
            Placement::Streamed => "streamed",
        }
    }

    /// From `resident` / `streamed`.
    pub fn parse(s: &str) -> Option<Placement> {
        Placement::ALL.into_iter().find(|p| p.name() == s)
    }
}
