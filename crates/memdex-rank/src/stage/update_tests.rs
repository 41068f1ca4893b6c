use memdex_core::Role;
use memdex_store::ItemRef;

use memdex_extract::question::Subject;

use super::super::value::{same_term, ValueTest};
use super::*;

const DAY: i64 = 86_400_000;
const T0: i64 = 1_700_000_000_000;

/// Items: (session, day, text), one per timeline index.
struct Items(Vec<(&'static str, i64, &'static str)>);

impl<'s> UpdateRows<'s> for &'s Items {
    fn rows(&self) -> usize {
        self.0.len()
    }
    fn item(&self, i: usize) -> ItemRef<'s> {
        let (session, day, text) = self.0[i];
        ItemRef {
            item_id: i as u64,
            tenant: "t",
            session_id: session,
            turn: i as u32,
            position: i as u64,
            timestamp_ms: T0 + day * DAY,
            role: Role::User,
            value: text,
            key: text,
            content_hash: 0,
            embedding: &[],
        }
    }
}

fn run(items: &Items, order: &[usize], scores: &[f64], q: &str) -> (Vec<usize>, Vec<UpdateMove>) {
    let mut order = order.to_vec();
    let query = Query {
        text: q,
        vector: &[],
        date_ms: Some(T0 + 400 * DAY),
    };
    let moves = update_order(
        &mut order,
        &items,
        |i| scores[i],
        &query,
        UpdateStage::default(),
    );
    (order, moves)
}

fn sister() -> Items {
    Items(vec![
        (
            "s1",
            0,
            "user: I'm visiting my sister Maya in Porto, she has lived there for years.",
        ),
        ("s2", 50, "user: What's a good lasagna recipe?"),
        (
            "s3",
            100,
            "user: My sister called.\nuser: She finally moved into a flat in Lisbon!",
        ),
        ("s4", 150, "user: My cousin Rosa just moved to Berlin."),
    ])
}

#[test]
fn a_newer_statement_of_a_change_takes_the_older_ones_rank() {
    let items = sister();
    let scores = [1.0, 0.2, 0.8, 0.7];
    let (order, moves) = run(&items, &[0, 2, 3, 1], &scores, "Where does my sister live?");
    // the sister's move is linked to the old statement; the cousin's is not the sister's
    assert_eq!(order, [2, 0, 3, 1]);
    assert_eq!(moves.len(), 2);
    let m = moves.iter().find(|m| m.item == 2).unwrap();
    assert_eq!((m.linked, m.change.cue), (0, "moved"));
    assert_eq!(m.direction, UpdateDirection::NewestFirst);
    // a question about the earlier state: the older one first
    let (order, _) = run(
        &items,
        &[2, 0, 3, 1],
        &scores,
        "Where did my sister live before?",
    );
    assert_eq!(order, [0, 2, 3, 1]);
}

#[test]
fn an_item_that_does_not_answer_the_question_is_never_moved() {
    let items = sister();
    // the newer statement scores under a third of the best: not an answer, no link
    let scores = [1.0, 0.2, 0.3, 0.1];
    let (order, moves) = run(&items, &[0, 2, 1, 3], &scores, "Where does my sister live?");
    assert_eq!((order, moves.len()), (vec![0, 2, 1, 3], 0));
}

#[test]
fn a_related_statement_that_states_no_change_stays_below() {
    let items = Items(vec![
        ("a", 0, "user: I adopted a beagle called Luna."),
        ("b", 90, "user: Luna graduated from obedience school today."),
    ]);
    let (order, moves) = run(&items, &[0, 1], &[1.0, 0.9], "What is my dog's name?");
    assert_eq!((order, moves.len()), (vec![0, 1], 0));
}

#[test]
fn groups_are_cliques_not_chains() {
    // a union of links would chain 0, 1 and 2 into one group and move 1 too
    let items = Items(vec![
        ("a", 0, "user: My sister lives in Porto."),
        ("b", 50, "user: My sister and I went hiking."),
        ("c", 100, "user: My sister moved to Lisbon."),
        ("d", 120, "user: What's the capital of Peru?"),
    ]);
    let scores = [1.0, 0.9, 0.8, 0.7];
    let (order, _) = run(&items, &[0, 1, 2, 3], &scores, "Where does my sister live?");
    // links: (0, 2) and (1, 2), each newer side stating a change; 0 and 1 are not linked
    // (1 states none), so the clique from rank 1 is {0, 2} and 1 keeps its rank
    assert_eq!(order, [2, 1, 0, 3]);
}

#[test]
fn same_session_items_are_never_linked() {
    let items = Items(vec![
        ("a", 0, "user: My sister lives in Porto."),
        ("a", 0, "user: My sister moved to Lisbon now."),
    ]);
    let (order, moves) = run(&items, &[0, 1], &[1.0, 0.9], "Where does my sister live?");
    assert_eq!((order, moves.len()), (vec![0, 1], 0));
}

#[test]
fn the_session_text_gathers_adjacent_items_and_skips_the_assistant() {
    let items = sister();
    assert_eq!(
        session_text(2, &&items),
        "user: My sister called.\nuser: She finally moved into a flat in Lisbon!\n"
    );
}

#[test]
fn a_named_range_is_left_to_the_time_stage() {
    let now = 1_700_000_000_000;
    assert_eq!(
        direction("Where does my sister live?", None, now),
        Some(UpdateDirection::NewestFirst)
    );
    assert_eq!(
        direction("Where did my sister live before?", Some(now), 0),
        Some(UpdateDirection::OldestFirst)
    );
    assert_eq!(
        direction("Where did I live in March 2021?", Some(now + DAY), now),
        None
    );
}

#[test]
fn the_same_attribute_with_a_new_value_links_without_a_cue() {
    let items = Items(vec![
        ("a", 0, "user: I live in Bristol, by the harbourside."),
        ("b", 90, "user: I live in Glasgow, in a top-floor flat."),
        ("c", 120, "user: My sister lives in Leeds."),
    ]);
    let q = "Where do I live?";
    let (order, moves) = run(&items, &[0, 1, 2], &[1.0, 0.9, 0.8], q);
    assert_eq!(order, [1, 0, 2], "the sister's home is not the user's");
    assert_eq!(moves[0].change.cue, VALUE_CUE);
    assert_eq!(moves[0].change.sentence, "I live in Glasgow");
    // a place question, contracted: two places of the subject's
    let sister = Items(vec![
        ("a", 0, "user: My sister Ana is based in Porto."),
        ("b", 90, "user: Ana has a flat in Lisbon."),
    ]);
    let (order, _) = run(&sister, &[0, 1], &[1.0, 0.9], "Where's my sister based?");
    assert_eq!(order, [1, 0]);
    let (order, _) = run(
        &sister,
        &[0, 1],
        &[1.0, 0.9],
        "Which city is my sister based in?",
    );
    assert_eq!(order, [1, 0]);
    // the same value again is a repeated fact, not a change
    let again = Items(vec![
        ("a", 0, "user: I live in Bristol, by the harbourside."),
        ("b", 90, "user: I live in Bristol and love it."),
    ]);
    let (order, moves) = run(&again, &[0, 1], &[1.0, 0.9], q);
    assert_eq!((order, moves.len()), (vec![0, 1], 0));
}

#[test]
fn a_cue_that_names_the_older_value_links_whatever_the_newer_rank() {
    let items = Items(vec![
        ("a", 0, "user: My brother Kieran drives an old Audi A4."),
        (
            "b",
            90,
            "user: Kieran swapped the Audi for a secondhand Nissan Leaf.",
        ),
        ("c", 95, "user: Kieran swapped shifts with a colleague."),
    ]);
    let q = "What car does my brother drive?";
    // both newer ones score under a third of the best: only the one naming the Audi moves
    let (order, moves) = run(&items, &[0, 1, 2], &[1.0, 0.2, 0.2], q);
    assert_eq!(order, [1, 0, 2]);
    assert_eq!(moves[0].change.cue, "swapped");
}

#[test]
fn leaving_the_older_value_links_and_left_alone_does_not() {
    let items = Items(vec![
        ("a", 0, "user: My wife Dana teaches at Fairfield Primary."),
        ("b", 90, "user: Dana left Fairfield for Hillcrest."),
        ("c", 95, "user: Dana left early to beat the traffic."),
        ("d", 99, "user: My friend Lou left Fairfield too."),
    ]);
    let q = "Which school does my wife teach at?";
    // all newer ones score low: only the wife's leaving of Fairfield moves (its item holds
    // none of the question's terms)
    let (order, moves) = run(&items, &[0, 1, 2, 3], &[1.0, 0.2, 0.2, 0.2], q);
    assert_eq!(order, [1, 0, 2, 3]);
    assert_eq!((moves[0].change.cue, moves.len()), ("left", 2));
}

#[test]
fn a_verb_of_ending_with_the_older_statements_word_as_object_links() {
    let items = Items(vec![
        ("a", 0, "user: My daughter Ivy plays hockey on Saturdays."),
        ("b", 90, "user: Ivy dropped her phone down the stairs."),
        ("c", 95, "user: Ivy dropped hockey and took up judo."),
    ]);
    let q = "What sport does my daughter play?";
    let (order, moves) = run(&items, &[0, 1, 2], &[1.0, 0.2, 0.2], q);
    assert_eq!(order, [2, 1, 0]);
    assert_eq!((moves[0].change.cue, moves.len()), ("dropped", 2));
}

/// Rows with key vectors, for the value test's cosine bar.
struct Vectors(Vec<(&'static str, i64, &'static str, [f32; 2])>);

impl<'s> UpdateRows<'s> for &'s Vectors {
    fn rows(&self) -> usize {
        self.0.len()
    }
    fn item(&self, i: usize) -> ItemRef<'s> {
        let (session, day, text, ref v) = self.0[i];
        ItemRef {
            item_id: i as u64,
            tenant: "t",
            session_id: session,
            turn: i as u32,
            position: i as u64,
            timestamp_ms: T0 + day * DAY,
            role: Role::User,
            value: text,
            key: text,
            content_hash: 0,
            embedding: v,
        }
    }
}

#[test]
fn a_value_link_needs_both_items_to_answer_the_question_clearly() {
    let q_vec = [1.0, 0.0];
    let rows = |far: [f32; 2]| {
        Vectors(vec![
            (
                "a",
                0,
                "user: I live in Bristol, by the harbour.",
                [0.8, 0.6],
            ),
            ("b", 90, "user: I live in Glasgow, in a flat.", far),
        ])
    };
    let run_with = |rows: &Vectors, newer: f64| {
        let mut order = vec![0, 1];
        let query = Query {
            text: "Where do I live?",
            vector: &q_vec,
            date_ms: Some(T0 + 400 * DAY),
        };
        update_order(
            &mut order,
            &rows,
            |i| [1.0, newer][i],
            &query,
            UpdateStage::default(),
        );
        order
    };
    assert_eq!(
        run_with(&rows([0.6, 0.8]), 0.9),
        [1, 0],
        "cosine 0.6 ≥ the bar"
    );
    let below = run_with(&rows([0.1, 0.995]), 0.9);
    assert_eq!(below, [0, 1], "cosine 0.1 < the bar");
    // the pair decides, not the newer one's score: under a third of the best, still linked
    assert_eq!(run_with(&rows([0.6, 0.8]), 0.2), [1, 0]);
}

// the value test
/// A fact with the values its capitalised words and digits give (as `facts_in` reads
/// them, near enough for these tests).
fn fact(clause: &str) -> Fact {
    let values = (clause.split_whitespace().skip(1))
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| w.starts_with(|c: char| c.is_uppercase() || c.is_ascii_digit()))
        .filter(|w| *w != "I")
        .map(str::to_lowercase)
        .collect();
    Fact {
        clause: clause.into(),
        values,
        places: Vec::new(),
        times: Vec::new(),
        person_name: None,
    }
}

#[test]
fn the_same_attribute_with_another_value_is_a_change() {
    let t = ValueTest::new("Where do I live?", &Subject::User);
    let old = [fact("I live in Bristol")];
    let new = [fact("I live in Glasgow")];
    assert!(t.changed(&old, &new, false).is_some());
    // the same value again is no change
    let same = [fact("I live in Bristol")];
    assert!(t.changed(&old, &same, false).is_none());
    // another attribute is no change
    let other = [fact("I work in Leeds")];
    assert!(t.changed(&old, &other, false).is_none());
    // a light verb is no attribute: "I go to the gym" / "I hit the gym"
    let gym = ValueTest::new("Which days do I go to the gym?", &Subject::User);
    let mon = [fact("I go to the gym on Monday")];
    let tue = [fact("I hit the gym on 2 days")];
    assert!(gym.changed(&mon, &tue, false).is_some());
    // "to" + the question's term is a place phrase when the question has it so
    let t2 = ValueTest::new("How do I get to work?", &Subject::User);
    let bike = [fact("I cycle to work, 20 minutes")];
    let bus = [fact("I take the 42 bus to work")];
    assert!(t2.changed(&bike, &bus, false).is_some());
    // an infinitive states nothing
    let wish = [fact("I'd love to live in Glasgow")];
    assert!(t.changed(&old, &wish, false).is_none());
    // no specific value to compare
    let vague = [fact("I love where I live now")];
    assert!(t.changed(&old, &vague, false).is_none());
}

#[test]
fn the_newer_statement_gives_every_question_term_the_older_one_gave() {
    let t = ValueTest::new("Which credit card do I use?", &Subject::User);
    let old = [fact("I put it all on my Sapphire credit card")];
    let debit = [fact("I'm setting up a debit card")];
    assert!(t.changed(&old, &debit, false).is_none());
    let new = [fact("now my credit card is an Amex")];
    assert!(t.changed(&old, &new, false).is_some());
    // items whose key vectors are near need share only one of the older one's terms
    let t = ValueTest::new("How much do I earn per hour?", &Subject::User);
    let old = [fact("I earn $18 an hour as a barista")];
    let new = [fact("At $23 an hour I can finally afford a studio")];
    assert!(t.changed(&old, &new, false).is_none());
    assert!(t.changed(&old, &new, true).is_some());
    let none = [fact("At $23 a month I can finally afford a studio")];
    assert!(t.changed(&old, &none, true).is_none());
    // ... a common word: a name in the question names a thing, not an attribute
    let q = "What memory does \"Harry Potter and the Philosopher's Stone\" bring to Tim?";
    let t = ValueTest::new(q, &Subject::Other(vec!["tim".into()]));
    let old = [fact(
        "Harry Potter and the Philosopher's Stone is special to me",
    )];
    let new = [fact("I went to a Harry Potter conference in the UK")];
    assert!(t.changed(&old, &new, true).is_none());
}

#[test]
fn an_amount_statement_names_what_the_question_measures() {
    let t = ValueTest::new("How much rent do I pay each month?", &Subject::User);
    let old = [fact("My rent is £950 a month")];
    let tax = [fact("Council tax is £142 a month")];
    assert!(t.changed(&old, &tax, true).is_none());
    let rent = [fact("the rent is £1,000 a month from May")];
    assert!(t.changed(&old, &rent, true).is_some());
    // a question with no noun measured keeps the near rule ("At $23 an hour …")
    let t = ValueTest::new("How much do I earn per hour?", &Subject::User);
    let old = [fact("I earn $18 an hour as a barista")];
    let new = [fact("At $23 an hour I can finally afford a studio")];
    assert!(t.changed(&old, &new, true).is_some());
    // a copular question's head noun: another count of steps is no step goal
    let t = ValueTest::new("What's my daily step goal?", &Subject::User);
    let old = [fact("my step goal is 10,000 a day")];
    let walk = [fact("did 14,200 steps yesterday walking round york")];
    assert!(t.changed(&old, &walk, true).is_none());
    let goal = [fact("I've put my step goal up to 12,000")];
    assert!(t.changed(&old, &goal, true).is_some());
}

#[test]
fn a_thing_of_the_kind_the_question_asks_is_a_value() {
    let t = ValueTest::new("What sport does my son play?", &Subject::User);
    let rugby = [fact("My son plays rugby every Sunday")];
    let basketball = [fact("he plays basketball for his school team")];
    assert!(t.changed(&rugby, &basketball, false).is_some());
    // the same thing again, or no thing of the kind, is no change
    let again = [fact("he plays rugby for the under-12s")];
    assert!(t.changed(&rugby, &again, false).is_none());
    let none = [fact("he plays on Sundays with his mates")];
    assert!(t.changed(&rugby, &none, false).is_none());
    // with no question term shared: both name a colour
    let t = ValueTest::new("What colour is my hair now?", &Subject::User);
    let purple = [fact("My hair is dyed purple")];
    let brown = [fact("I went back to my natural dark brown last month")];
    assert!(t.changed(&purple, &brown, false).is_some());
    // a question asking no kind reads no kind
    let t = ValueTest::new("How is my hair now?", &Subject::User);
    assert!(t.changed(&purple, &brown, false).is_none());
}

#[test]
fn the_cheap_filter_passes_every_text_the_test_may_read() {
    let t = ValueTest::new("What am I studying these days?", &Subject::User);
    assert!(t.mentions("I'm doing a study of Birkbeck's history MA"));
    assert!(t.mentions("My Studies are going well"));
    assert!(!t.mentions("What's a good lasagna recipe?"));
    let name = ValueTest::new("What is my dog called?", &Subject::User);
    assert!(name.mentions("anything at all"));
    let kind = ValueTest::new("What colour is my hair now?", &Subject::User);
    assert!(kind.mentions("I went back to my natural dark brown"));
    assert!(!kind.mentions("What's a good lasagna recipe?"));
}

#[test]
fn terms_share_a_stem_or_a_long_prefix() {
    assert!(same_term("member", "membership"));
    assert!(!same_term("car", "cardio"));
    let t = ValueTest::new("Which gym am I a member of?", &Subject::User);
    let old = [fact("I'm a member at PureGym")];
    let new = [fact("I have my membership at Better")];
    assert!(t.changed(&old, &new, false).is_some());
}

#[test]
fn a_name_question_compares_the_names_given() {
    let subject = Subject::Other(vec!["girlfriend".into()]);
    let t = ValueTest::new("What is my girlfriend's name?", &subject);
    let named = |n: &str| Fact {
        person_name: Some(("girlfriend".into(), n.into())),
        ..fact("my girlfriend")
    };
    assert!(t
        .changed(&[named("chloe")], &[named("aisha")], false)
        .is_some());
    assert!(t
        .changed(&[named("chloe")], &[named("chloe")], false)
        .is_none());
    // "Who …?" asks a name too, of one person noun
    let t = ValueTest::new("Who is my landlord now?", &Subject::User);
    let landlord = |n: &str| Fact {
        person_name: Some(("landlord".into(), n.into())),
        ..fact("my landlord")
    };
    let manager = Fact {
        person_name: Some(("manager".into(), "sue".into())),
        ..fact("my manager")
    };
    let (dave, priya) = ([landlord("dave")], [landlord("priya")]);
    assert!(t.changed(&dave, &priya, false).is_some());
    assert!(t.changed(&dave, &[manager], false).is_none());
}
