use super::*;

fn one(text: &str) -> Vec<Triple> {
    RuleThoughts::default().extract(
        &ThoughtInput {
            text,
            speaker: None,
            anchor: None,
        },
        &mut Context::default(),
    )
}

fn said(t: &Triple) -> (String, String, String, Polarity) {
    (
        t.subject.clone(),
        t.relation.clone(),
        t.object.clone(),
        t.polarity,
    )
}

fn s(
    subject: &str,
    relation: &str,
    object: &str,
    p: Polarity,
) -> (String, String, String, Polarity) {
    (subject.into(), relation.into(), object.into(), p)
}

#[test]
fn canonical_relations_and_objects_up_to_a_boundary() {
    let a = Polarity::Assert;
    let got: Vec<_> = one("My sister lives in Porto. I work at Google, which is great!")
        .iter()
        .map(said)
        .collect();
    assert_eq!(
        got,
        [
            s("User's sister", "lives in", "Porto", a),
            s("User", "works at", "Google", a)
        ]
    );
    let t = &one("Caroline: I moved to Lisbon last month and love it.")[0];
    assert_eq!(said(t), s("Caroline", "lives in", "Lisbon", a));
    assert_eq!(t.sentence(), "Caroline lives in Lisbon");
    assert!(t.functional);
    let t = &one("I'm a teacher.")[0];
    assert_eq!(said(t), s("User", "is", "a teacher", a));
    assert!(!t.functional);
    let t = &one("I've got a dog? No. I have a dog named Max.")[0];
    assert_eq!(said(t), s("User", "has", "a dog named Max", a));
    let t = &one("My dog's name is Max.")[0];
    assert_eq!(said(t), s("User's dog", "is named", "Max", a));
    let t = &one("Melanie: We went to the beach yesterday.")[0];
    assert_eq!(said(t), s("Melanie", "went to", "the beach", a));
    let t = &one("I am 34 years old.")[0];
    assert_eq!(said(t), s("User", "is aged", "34", a));
    let t = &one("I'm married.")[0];
    assert_eq!(said(t), s("User", "relationship status is", "married", a));
}

#[test]
fn negations_and_forget_that_are_not_assertions() {
    let t = &one("I don't live in Porto anymore.")[0];
    assert_eq!(said(t), s("User", "lives in", "Porto", Polarity::Negate));
    let t = &one("I no longer work at Google.")[0];
    assert_eq!(said(t), s("User", "works at", "Google", Polarity::Negate));
    let t = &one("Please forget that my sister lives in Porto.")[0];
    assert_eq!(
        said(t),
        s("User's sister", "lives in", "Porto", Polarity::ForgetThat)
    );
    let t = &one("Forget that I have a cat.")[0];
    assert_eq!(said(t), s("User", "has", "a cat", Polarity::ForgetThat));
}

#[test]
fn pronouns_resolve_to_the_latest_third_party_of_their_gender() {
    let x = RuleThoughts::default();
    let mut ctx = Context::default();
    let input = |text| ThoughtInput {
        text,
        speaker: None,
        anchor: None,
    };
    let first = x.extract(
        &input("My brother plays chess. My sister lives in Porto."),
        &mut ctx,
    );
    assert_eq!(
        said(&first[0]),
        s("User's brother", "plays", "chess", Polarity::Assert)
    );
    let t = x.extract(&input("She moved to Lisbon."), &mut ctx);
    assert_eq!(
        said(&t[0]),
        s("User's sister", "lives in", "Lisbon", Polarity::Assert)
    );
    let t = x.extract(&input("He works at CERN."), &mut ctx);
    assert_eq!(t[0].subject, "User's brother");
    // no one to refer to: nothing
    assert!(one("She moved to Lisbon.").is_empty());
}

#[test]
fn chit_chat_questions_and_openers_yield_nothing() {
    for text in [
        "Thanks! That sounds great.",
        "How are you?",
        "Wow, so cool!",
        "Caroline: Hey Mel! Good to see you! How have you been?",
        "",
        "I",
        "my",
        "I am",
    ] {
        assert!(one(text).is_empty(), "{text:?}: {:?}", one(text));
    }
}

#[test]
fn facts_of_any_fact_extractor_become_thoughts() {
    let x = FromFacts::new(memdex_extract::HeuristicFacts::default());
    assert_eq!(x.name(), "facts:heuristic-v1");
    let got = x.extract(
        &ThoughtInput {
            text: "Caroline: I went to a support group yesterday and it was powerful.",
            speaker: None,
            anchor: chrono::NaiveDate::from_ymd_opt(2023, 5, 8),
        },
        &mut Context::default(),
    );
    assert_eq!(
        said(&got[0]),
        s("Caroline", "went to", "a support group", Polarity::Assert)
    );
}

#[test]
fn object_keys_ignore_case_and_determiners() {
    assert_eq!(object_key("a Dog"), "dog");
    assert_eq!(object_key("The  old   house"), "old house");
    assert_eq!(object_key("the"), "");
}

#[test]
fn a_named_person_who_moved_is_a_subject_in_any_phrasing() {
    let a = Polarity::Assert;
    for (text, who) in [
        (
            "Big news: Ioana moved to Lisbon last month for a new orchestra job.",
            "Ioana",
        ),
        ("Ioana relocated to Lisbon in May.", "Ioana"),
        ("Ioana now lives in Lisbon.", "Ioana"),
        (
            "My friend said Tom is great. Tom just moved to Lisbon!",
            "Tom",
        ),
        ("Mary Ann finally moved to Lisbon.", "Mary Ann"),
    ] {
        let got = one(text);
        let t = got
            .iter()
            .find(|t| t.relation == "lives in")
            .unwrap_or_else(|| panic!("{text}: {got:?}"));
        assert_eq!(said(t), s(who, "lives in", "Lisbon", a), "{text}");
    }
    // a capitalised opener followed by no relation is still not a person
    assert!(one("Thanks for the tips, they helped.").is_empty());
    assert!(one("Great news about the flat.").is_empty());
}

#[test]
fn a_prefix_that_is_not_a_name_is_not_a_speaker() {
    assert_eq!(
        split_speaker("Big news: Ioana moved."),
        (None, "Big news: Ioana moved.")
    );
    assert_eq!(
        split_speaker("Mary Ann: I moved."),
        (Some("Mary Ann"), "I moved.")
    );
}
