//! Ed25519: nanoseconds per signature and per verification of a 600-byte message (about a
//! JWT's signing input), median of five rounds of 20,000, in aws-lc-rs (the service's),
//! ring and ed25519-dalek. Then what a DPoP proof costs to verify (issue 33): a 300-byte
//! signing input, ECDSA P-256 (ES256) in aws-lc-rs and ring, beside Ed25519.
//! `cargo run --release`; run it on an otherwise idle machine.

use std::hint::black_box;
use std::time::Instant;

const ROUNDS: usize = 5;
const PER_ROUND: u32 = 20_000;

fn median_nanos(mut f: impl FnMut()) -> f64 {
    let mut rounds: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let started = Instant::now();
            for _ in 0..PER_ROUND {
                f();
            }
            started.elapsed().as_nanos() as f64 / f64::from(PER_ROUND)
        })
        .collect();
    rounds.sort_by(f64::total_cmp);
    rounds[ROUNDS / 2]
}

fn main() {
    let message = vec![b'a'; 600];
    let seed = [7u8; 32];

    let aws = aws_lc_rs::signature::Ed25519KeyPair::from_seed_unchecked(&seed).unwrap();
    let aws_signature = aws.sign(&message);
    let aws_public = aws_lc_rs::signature::UnparsedPublicKey::new(
        &aws_lc_rs::signature::ED25519,
        aws_lc_rs::signature::KeyPair::public_key(&aws).as_ref().to_vec(),
    );

    let ring_pair = ring::signature::Ed25519KeyPair::from_seed_unchecked(&seed).unwrap();
    let ring_signature = ring_pair.sign(&message);
    let ring_public = ring::signature::UnparsedPublicKey::new(
        &ring::signature::ED25519,
        ring::signature::KeyPair::public_key(&ring_pair).as_ref().to_vec(),
    );

    let dalek = ed25519_dalek::SigningKey::from_bytes(&seed);
    let dalek_signature = ed25519_dalek::Signer::sign(&dalek, &message);
    let dalek_public = dalek.verifying_key();

    // The three agree: the same key signs the same message to the same signature.
    assert_eq!(aws_signature.as_ref(), ring_signature.as_ref());
    assert_eq!(aws_signature.as_ref(), dalek_signature.to_bytes().as_slice());

    println!("| implementation | sign, ns | verify, ns |");
    println!("|---|---:|---:|");
    let rows = [
        (
            "aws-lc-rs",
            median_nanos(|| {
                black_box(aws.sign(black_box(&message)));
            }),
            median_nanos(|| aws_public.verify(black_box(&message), aws_signature.as_ref()).unwrap()),
        ),
        (
            "ring",
            median_nanos(|| {
                black_box(ring_pair.sign(black_box(&message)));
            }),
            median_nanos(|| ring_public.verify(black_box(&message), ring_signature.as_ref()).unwrap()),
        ),
        (
            "ed25519-dalek",
            median_nanos(|| {
                black_box(ed25519_dalek::Signer::sign(&dalek, black_box(&message)));
            }),
            median_nanos(|| {
                ed25519_dalek::Verifier::verify(&dalek_public, black_box(&message), &dalek_signature).unwrap()
            }),
        ),
    ];
    for (name, sign, verify) in rows {
        println!("| {name} | {sign:.0} | {verify:.0} |");
    }
    proofs();
}

/// Verifying a DPoP proof's signature: ES256 and Ed25519, 300 bytes signed.
fn proofs() {
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
    let message = vec![b'a'; 300];
    let rng = aws_lc_rs::rand::SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref()).unwrap();
    let signature = pair.sign(&rng, &message).unwrap();
    let point = pair.public_key().as_ref().to_vec();
    let aws = aws_lc_rs::signature::UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point.clone());
    let ring = ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, point);
    let ed = aws_lc_rs::signature::Ed25519KeyPair::from_seed_unchecked(&[7u8; 32]).unwrap();
    let ed_signature = ed.sign(&message);
    let ed_public = aws_lc_rs::signature::UnparsedPublicKey::new(
        &aws_lc_rs::signature::ED25519,
        aws_lc_rs::signature::KeyPair::public_key(&ed).as_ref().to_vec(),
    );
    println!();
    println!("| DPoP proof (300 bytes signed) | verify, ns |");
    println!("|---|---:|");
    let es256_aws = median_nanos(|| aws.verify(black_box(&message), signature.as_ref()).unwrap());
    let es256_ring = median_nanos(|| ring.verify(black_box(&message), signature.as_ref()).unwrap());
    let eddsa_aws = median_nanos(|| ed_public.verify(black_box(&message), ed_signature.as_ref()).unwrap());
    println!("| ES256, aws-lc-rs (the service's) | {es256_aws:.0} |");
    println!("| ES256, ring | {es256_ring:.0} |");
    println!("| Ed25519, aws-lc-rs (the service's) | {eddsa_aws:.0} |");
}
