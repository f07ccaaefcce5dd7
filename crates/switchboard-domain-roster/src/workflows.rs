//! The roster's workflows offered as tools. Each definition is the example file under
//! `docs/examples/workflows`, included at compile time so the file stays the one copy.

switchboard_core::workflow!({
    name: "roster_swap_shifts",
    domain: "roster",
    description: "Swap the people of two shifts: each takes the other's shift. When the second \
                  assignment fails, the first is undone.",
    category: Execute,
    permission: "roster.shifts.assign",
    file: "../../../docs/examples/workflows/shift_swap.yaml",
});
