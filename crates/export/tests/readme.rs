//! The README's column tables are the datasets' columns ([`pcapsleuth_export::columns`]): names, types
//! and meanings, in the files' order. Adding or changing a column fails here until the README says it.

use pcapsleuth_export::columns::{Dataset, DATASETS};

/// The table the README must hold for `d`, under its heading `#### \`NAME\``.
fn table(d: &Dataset) -> String {
    let mut t = String::from("| column | type | meaning |\n|---|---|---|\n");
    t.push_str("| `capture` | string | The capture's name (`--capture`, or the first file's name): a partition key and a constant column. |\n");
    t.push_str("| *label keys* | string | One constant column per `--label KEY=VALUE`, in the order given; partition keys before `capture`. |\n");
    for c in d.columns {
        let null = if c.nullable { ", null" } else { "" };
        t.push_str(&format!(
            "| `{}` | {}{null} | {} |\n",
            c.name,
            c.ty.name(),
            c.meaning
        ));
    }
    t
}

#[test]
fn the_readme_lists_every_column_of_every_dataset() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let readme = std::fs::read_to_string(&path).expect("README.md");
    let mut missing = String::new();
    for d in DATASETS {
        let heading = format!("#### `{}`", d.name);
        let want = table(d);
        let found = readme.split(&heading).nth(1).and_then(|after| {
            let body = after.split_once("| column |")?.1;
            let mut lines = body.lines();
            let head = lines.next()?;
            let rows: Vec<&str> = lines.take_while(|l| l.starts_with('|')).collect();
            Some(format!("| column |{head}\n{}\n", rows.join("\n")))
        });
        if found.as_deref() != Some(want.as_str()) {
            missing.push_str(&format!("{heading}\n\n{}\n{want}\n", d.row));
        }
    }
    assert!(
        missing.is_empty(),
        "README.md's tables differ from the columns; they should read:\n\n{missing}"
    );
}
