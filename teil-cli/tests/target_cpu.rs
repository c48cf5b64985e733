//! `--target-cpu` (spec/padding.md, *Sizes from the machine*): the machine a kernel's sizes
//! are chosen for changes which kernel form a step gets, never a result, and a bad description
//! is a usage error naming its line.

mod support;

use std::process::Command;
use support::{teil, text, write};

/// Issue 43's product: a small product (dot kernel) on a 1 MiB L2, packed on a 512 KiB one.
const PRODUCT: &str = "input var A : [257 263]\ninput var B : [263 269]\n\
                       output var C : [257 269]\nC = (A # B) .[2 3]\n";

fn packed(c: &str) -> bool {
    c.contains("teil_kcb")
}

#[test]
fn the_machine_chooses_the_kernel_form() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write(dir.path(), "mm.teil", PRODUCT);
    let zen3 = write(dir.path(), "zen3.txt", "# a Zen 3\nl1d = 32K\nl2 = 512K\n");
    let reference = teil(&["emit-c", &file, "--target-cpu", "reference"]);
    assert_eq!(
        reference.status.code(),
        Some(0),
        "{}",
        text(&reference.stderr)
    );
    assert!(!packed(&text(&reference.stdout)));
    let on_zen3 = teil(&["emit-c", &file, "--target-cpu", &zen3]);
    assert_eq!(on_zen3.status.code(), Some(0), "{}", text(&on_zen3.stderr));
    assert!(packed(&text(&on_zen3.stdout)));
    // The environment names the machine when no flag does; the flag wins.
    let from_env = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_teil"))
            .args(args)
            .env("TEIL_TARGET_CPU", &zen3)
            .output()
            .expect("teil runs")
    };
    assert_eq!(from_env(&["emit-c", &file]).stdout, on_zen3.stdout);
    assert_eq!(
        from_env(&["emit-c", &file, "--target-cpu", "reference"]).stdout,
        reference.stdout
    );
}

#[test]
fn results_do_not_depend_on_the_machine() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = "input var A : [40 33]\ninput var B : [33 37]\noutput var C : [40 37]\n\
               C = (A # B) .[2 3]\n";
    let file = write(dir.path(), "mm.teil", src);
    // A tiny L2 makes this product packed; the reference keeps it a small product.
    let tiny = write(dir.path(), "tiny.txt", "l2 = 16K\n");
    let c = |machine: &str| {
        let o = teil(&["emit-c", &file, "--target-cpu", machine, "--no-reassociate"]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        text(&o.stdout)
    };
    assert!(packed(&c(&tiny)) && !packed(&c("reference")));
    let run = |machine: &str| {
        let o = teil(&[
            "run",
            &file,
            "--backend",
            "c",
            "--random-inputs",
            "7",
            "--no-reassociate",
            "--target-cpu",
            machine,
            "--print",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        text(&o.stdout)
    };
    let oracle = teil(&["run", &file, "--random-inputs", "7", "--oracle", "--print"]);
    assert_eq!(run(&tiny), text(&oracle.stdout));
    assert_eq!(run("reference"), text(&oracle.stdout));
}

#[test]
fn bad_descriptions_are_usage_errors() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write(dir.path(), "mm.teil", PRODUCT);
    let bad = write(dir.path(), "bad.txt", "l1d = 32K\nl2 = lots\n");
    for args in [
        vec!["emit-c", &file, "--target-cpu", &bad],
        vec![
            "run",
            &file,
            "--backend",
            "c",
            "--random-inputs",
            "1",
            "--target-cpu",
            &bad,
        ],
    ] {
        let o = teil(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = text(&o.stderr);
        assert!(
            err.contains(&format!(
                "--target-cpu: `{bad}`, line 2: `l2` must be a size"
            )),
            "{err}"
        );
    }
    let o = teil(&["emit-c", &file, "--target-cpu", "/no/such/machine"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("expected `host`, `reference` or a file"));
}
