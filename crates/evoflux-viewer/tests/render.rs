#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The viewer on real documents (written by python-docx, openpyxl,
//! python-pptx and reportlab) and on hostile ones built here: every kind
//! renders what it holds, every bound holds with a notice, every refusal
//! has its code, and nothing outside the package is ever fetched.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use evoflux_viewer::{
    Cache, DocumentKind, NoticeKind, PageRange, Rendered, ViewLimits, ViewRequest, Viewer, render,
};
use zip::write::SimpleFileOptions;

/// The Python that has the document libraries, or `None` (the test then
/// says it is skipped): `EVOFLUX_TEST_PYTHON` (CI's venv) or `python3`.
fn python() -> Option<String> {
    let candidates = [
        std::env::var("EVOFLUX_TEST_PYTHON").ok(),
        Some("python3".into()),
    ];
    candidates.into_iter().flatten().find(|py| {
        Command::new(py)
            .args(["-c", "import docx, openpyxl, pptx, reportlab"])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// Writes the document set `which` into a fresh folder.
fn documents(which: &str) -> Option<(tempfile::TempDir, PathBuf)> {
    let Some(py) = python() else {
        eprintln!(
            "SKIPPED: no Python with python-docx, openpyxl, python-pptx and reportlab (set EVOFLUX_TEST_PYTHON)"
        );
        return None;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(which);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/make_documents.py");
    let out = Command::new(py)
        .arg(script)
        .arg(&dir)
        .arg(which)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some((tmp, dir))
}

fn codes(r: &Rendered) -> Vec<NoticeKind> {
    r.notices.iter().map(|n| n.code).collect()
}

fn all_html(r: &Rendered) -> String {
    r.parts.iter().map(|p| p.html.as_str()).collect()
}

#[test]
fn real_documents_render_what_they_hold_and_come_back_from_the_cache() {
    let Some((tmp, dir)) = documents("real") else {
        return;
    };
    let cache = Cache::new(tmp.path().join("cache"));
    let viewer = Viewer::new(ViewLimits::DEFAULT, Some(cache));

    let docx = viewer
        .open(&dir.join("report.docx"), ViewRequest::default())
        .unwrap();
    assert!(!docx.cached);
    assert_eq!(docx.rendered.kind, DocumentKind::Docx);
    let html = all_html(&docx.rendered);
    for want in [
        "<h1>Quarterly report</h1>",
        "<h2>Highlights</h2>",
        "<strong>twelve percent</strong>",
        "<em>ahead of plan</em>",
        "<ul><li>New customers in Lisbon</li><li>Churn below two percent</li></ul>",
        "<ol><li>Hire two engineers</li><li>Ship the viewer</li></ol>",
        "<table><tr><td><p>Region</p></td>",
        "<img src=\"data:image/png;base64,",
        "&lt;script&gt;alert(1)&lt;/script&gt; &amp; co.",
        "END-OF-REPORT",
    ] {
        assert!(html.contains(want), "{want} not in {html}");
    }
    assert!(!html.contains("<script"), "{html}");

    let xlsx = viewer
        .open(&dir.join("book.xlsx"), ViewRequest::default())
        .unwrap();
    let labels: Vec<&str> = xlsx
        .rendered
        .parts
        .iter()
        .map(|p| p.label.as_str())
        .collect();
    assert_eq!(labels, ["Sales", "Notes"]);
    let sales = &xlsx.rendered.parts[0].html;
    for want in [
        "<th>A</th><th>B</th><th>C</th><th>D</th>",
        "<tr><th>2</th><td>North</td><td class=\"n\">10</td><td class=\"n\">2.5</td>",
        "<td>2026-03-01</td>",
    ] {
        assert!(sales.contains(want), "{want} not in {sales}");
    }
    // openpyxl stores formulas without a computed value: none is invented.
    assert!(!sales.contains(">25<"), "{sales}");
    assert!(codes(&xlsx.rendered).contains(&NoticeKind::ValuesAsStored));
    assert!(
        xlsx.rendered.parts[1]
            .html
            .contains("Figures as of &lt;March&gt; &amp; unaudited")
    );

    let pptx = viewer
        .open(&dir.join("deck.pptx"), ViewRequest::default())
        .unwrap();
    let labels: Vec<&str> = pptx
        .rendered
        .parts
        .iter()
        .map(|p| p.label.as_str())
        .collect();
    assert_eq!(labels, ["Slide 1", "Slide 2", "Slide 3"]);
    let first = &pptx.rendered.parts[0].html;
    assert!(
        first.starts_with("<div class=\"slide\" data-ratio=\"9144000 6858000\">"),
        "{first}"
    );
    // The title sits where the layout puts it, as a fraction of the slide.
    assert!(
        first.contains("<div class=\"shape title\" data-box=\""),
        "{first}"
    );
    assert!(first.contains("Viewer deck") && first.contains("A subtitle line"));
    let agenda = &pptx.rendered.parts[1].html;
    assert!(
        agenda.contains("<p>First point</p><p>Second point</p>"),
        "{agenda}"
    );
    let numbers = &pptx.rendered.parts[2].html;
    assert!(
        numbers.contains("<img src=\"data:image/png;base64,"),
        "{numbers}"
    );
    assert!(
        numbers.contains("<table><tr><td><p>Metric</p></td>"),
        "{numbers}"
    );

    let pdf = viewer
        .open(&dir.join("paper.pdf"), ViewRequest::default())
        .unwrap();
    let info = pdf.rendered.pages.unwrap();
    assert_eq!((info.first, info.last, info.total), (1, 3, 3));
    assert_eq!(pdf.rendered.parts.len(), 3);
    assert!(
        pdf.rendered.parts[1].html.contains("Page 2 heading"),
        "{}",
        pdf.rendered.parts[1].html
    );
    assert!(codes(&pdf.rendered).contains(&NoticeKind::TextOnly));
    assert!(!codes(&pdf.rendered).contains(&NoticeKind::PagesPartial));
    let page3 = viewer
        .open(
            &dir.join("paper.pdf"),
            ViewRequest {
                pages: Some(PageRange { first: 3, last: 9 }),
            },
        )
        .unwrap();
    let info = page3.rendered.pages.unwrap();
    assert_eq!((info.first, info.last), (3, 3));
    assert!(codes(&page3.rendered).contains(&NoticeKind::PagesPartial));

    // The second opening is the cache's, identical.
    let again = viewer
        .open(&dir.join("report.docx"), ViewRequest::default())
        .unwrap();
    assert!(again.cached);
    assert_eq!(again.rendered, docx.rendered);
    assert_eq!(again.sha256, docx.sha256);
    // Other content is another key, even under the same name.
    std::fs::copy(dir.join("paper.pdf"), dir.join("copy.pdf")).unwrap();
    let mut bytes = std::fs::read(dir.join("copy.pdf")).unwrap();
    bytes.extend_from_slice(b"\n% appended\n");
    std::fs::write(dir.join("copy.pdf"), bytes).unwrap();
    let copy = viewer
        .open(&dir.join("copy.pdf"), ViewRequest::default())
        .unwrap();
    assert!(!copy.cached);
    assert_ne!(copy.sha256, pdf.sha256);
}

#[test]
fn large_documents_are_bounded_with_notices() {
    let Some((_tmp, dir)) = documents("big") else {
        return;
    };
    let viewer = Viewer::new(ViewLimits::DEFAULT, None);
    let cells = viewer
        .open(&dir.join("cells.xlsx"), ViewRequest::default())
        .unwrap();
    let sheet = &cells.rendered.parts[0].html;
    let rows = sheet.matches("</th><td").count();
    assert_eq!(rows, ViewLimits::DEFAULT.max_rows as usize, "rows shown");
    assert!(codes(&cells.rendered).contains(&NoticeKind::RowsTruncated));

    let limits = ViewLimits {
        max_cells: 2_000,
        ..ViewLimits::DEFAULT
    };
    let r = render(
        DocumentKind::Xlsx,
        &std::fs::read(dir.join("cells.xlsx")).unwrap(),
        ViewRequest::default(),
        &limits,
    )
    .unwrap();
    assert!(codes(&r).contains(&NoticeKind::CellsTruncated));
    assert_eq!(r.parts[0].html.matches("<td class=\"n\">").count(), 2_000);

    let pdf = viewer
        .open(&dir.join("book.pdf"), ViewRequest::default())
        .unwrap();
    let info = pdf.rendered.pages.unwrap();
    assert_eq!((info.first, info.last, info.total), (1, 25, 100));
    assert!(codes(&pdf.rendered).contains(&NoticeKind::PagesPartial));
    let outside = viewer
        .open(
            &dir.join("book.pdf"),
            ViewRequest {
                pages: Some(PageRange {
                    first: 101,
                    last: 120,
                }),
            },
        )
        .unwrap_err();
    assert_eq!(outside.code(), "viewer/page-range-outside");

    let talk = viewer
        .open(&dir.join("talk.pptx"), ViewRequest::default())
        .unwrap();
    assert_eq!(talk.rendered.parts.len(), 40);
    let few = ViewLimits {
        max_slides: 5,
        ..ViewLimits::DEFAULT
    };
    let r = render(
        DocumentKind::Pptx,
        &std::fs::read(dir.join("talk.pptx")).unwrap(),
        ViewRequest::default(),
        &few,
    )
    .unwrap();
    assert_eq!(r.parts.len(), 5);
    assert!(codes(&r).contains(&NoticeKind::SlidesTruncated));

    let long = std::fs::read(dir.join("long.docx")).unwrap();
    let full = render(
        DocumentKind::Docx,
        &long,
        ViewRequest::default(),
        &ViewLimits::DEFAULT,
    )
    .unwrap();
    assert!(all_html(&full).contains("END-OF-REPORT"));
    let short = ViewLimits {
        max_output_bytes: 20_000,
        ..ViewLimits::DEFAULT
    };
    let cut = render(DocumentKind::Docx, &long, ViewRequest::default(), &short).unwrap();
    assert!(codes(&cut).contains(&NoticeKind::OutputTruncated));
    assert!(all_html(&cut).len() <= 20_000);
    assert!(!all_html(&cut).contains("END-OF-REPORT"));
    let hurried = ViewLimits {
        deadline: Duration::ZERO,
        ..ViewLimits::DEFAULT
    };
    let err = render(DocumentKind::Docx, &long, ViewRequest::default(), &hurried).unwrap_err();
    assert_eq!(err.code(), "viewer/deadline-exceeded");
}

/// A minimal DOCX: the given document body and relationships, plus extra
/// parts.
fn docx(body: &str, rels: &str, extra: &[(&str, &[u8])]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let o = SimpleFileOptions::default();
    let mut put = |name: &str, data: &[u8]| {
        zip.start_file(name, o).unwrap();
        zip.write_all(data).unwrap();
    };
    put("[Content_Types].xml", br#"<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>"#);
    put("_rels/.rels", br#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>"#);
    put(
        "word/document.xml",
        format!(r#"<?xml version="1.0"?><w:document xmlns:w="w" xmlns:r="r" xmlns:a="a"><w:body>{body}</w:body></w:document>"#).as_bytes(),
    );
    put(
        "word/_rels/document.xml.rels",
        format!(r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">{rels}</Relationships>"#).as_bytes(),
    );
    for (name, data) in extra {
        put(name, data);
    }
    zip.finish().unwrap().into_inner()
}

fn open_bytes(name: &str, bytes: &[u8]) -> Result<Rendered, evoflux_viewer::ViewError> {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    Viewer::new(ViewLimits::DEFAULT, None)
        .open(&path, ViewRequest::default())
        .map(|o| o.rendered)
}

#[test]
fn hostile_packages_are_refused_or_rendered_without_following_anything() {
    // A zip bomb: 64 MiB of zeros in a few kilobytes.
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let o = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("[Content_Types].xml", o).unwrap();
    zip.write_all(b"<Types/>").unwrap();
    zip.start_file("word/document.xml", o).unwrap();
    let zeros = vec![0u8; 1024 * 1024];
    for _ in 0..64 {
        zip.write_all(&zeros).unwrap();
    }
    let bomb = zip.finish().unwrap().into_inner();
    assert!(bomb.len() < 1024 * 1024);
    let err = open_bytes("bomb.docx", &bomb).unwrap_err();
    assert_eq!(err.code(), "viewer/package-too-large", "{err}");

    // Traversal in an entry name.
    let evil = docx("<w:p/>", "", &[("../../evil.xml", b"x")]);
    assert_eq!(
        open_bytes("evil.docx", &evil).unwrap_err().code(),
        "viewer/package-unsafe-entry"
    );

    // A ZIP that is no Office document; a "document" that is no ZIP.
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    zip.start_file("readme.txt", SimpleFileOptions::default())
        .unwrap();
    zip.write_all(b"hi").unwrap();
    let plain = zip.finish().unwrap().into_inner();
    assert_eq!(
        open_bytes("plain.pptx", &plain).unwrap_err().code(),
        "viewer/package-invalid"
    );
    assert_eq!(
        open_bytes("fake.xlsx", b"name,units\nnorth,10\n")
            .unwrap_err()
            .code(),
        "viewer/kind-mismatch"
    );
    assert_eq!(
        open_bytes("fake.pdf", b"PK\x03\x04 not a pdf")
            .unwrap_err()
            .code(),
        "viewer/kind-mismatch"
    );
    assert_eq!(
        open_bytes("broken.pdf", b"%PDF-1.4 and nothing else")
            .unwrap_err()
            .code(),
        "viewer/pdf-unreadable"
    );
    assert_eq!(
        open_bytes("notes.txt", b"text").unwrap_err().code(),
        "viewer/unsupported-kind"
    );

    // External relationships: a linked picture and a hyperlink to a live
    // listener. The document renders; nothing connects.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&hits);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopped = Arc::clone(&stop);
    let watcher = std::thread::spawn(move || {
        while !stopped.load(Ordering::SeqCst) {
            if let Ok((mut s, _)) = listener.accept() {
                seen.fetch_add(1, Ordering::SeqCst);
                let mut b = [0u8; 64];
                let _ = s.read(&mut b);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    let url = format!("http://{addr}/pixel.png");
    let linked = docx(
        r#"<w:p><w:r><w:t>Linked: </w:t></w:r><w:hyperlink r:id="rIdL"><w:r><w:t>our site</w:t></w:r></w:hyperlink><w:r><w:drawing><a:blip r:link="rIdP" r:embed="rIdP"/></w:drawing></w:r></w:p>"#,
        &format!(
            r#"<Relationship Id="rIdP" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="{url}" TargetMode="External"/><Relationship Id="rIdL" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink" Target="{url}" TargetMode="External"/>"#
        ),
        &[("word/vbaProject.bin", b"macro bytes")],
    );
    let r = open_bytes("linked.docm", &linked).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::SeqCst);
    watcher.join().unwrap();
    assert_eq!(hits.load(Ordering::SeqCst), 0, "the viewer connected out");
    let html = all_html(&r);
    assert!(
        html.contains(&format!(
            "<span class=\"link\" title=\"{url}\">our site</span>"
        )),
        "{html}"
    );
    assert!(!html.contains("<img"), "{html}");
    assert!(!html.contains("href"), "{html}");
    let codes = codes(&r);
    assert!(
        codes.contains(&NoticeKind::ExternalNotFollowed),
        "{codes:?}"
    );
    assert!(codes.contains(&NoticeKind::MacrosNotRun), "{codes:?}");
}
