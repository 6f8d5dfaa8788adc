//! Prints the three tables' columns as docs/schema.md lists them: name,
//! Arrow type, nullability and unit.

fn main() {
    for t in rttlens_columnar::Table::ALL {
        println!("## `{}`", t.name());
        for f in t.schema().fields() {
            println!(
                "| `{}` | {} | {} | {} |",
                f.name(),
                f.data_type(),
                if f.is_nullable() { "yes" } else { "no" },
                f.metadata()[rttlens_columnar::UNIT_KEY]
            );
        }
    }
}
