//! Ids in JSON bodies: a whole number, written as `59` or `59.0` (JSON Schema
//! counts both as integers, and so do some clients' serializers).

use std::fmt;

use serde::Deserializer;
use serde::de::{Error, Visitor};

struct Whole;

impl Visitor<'_> for Whole {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a whole number from 0 to 18446744073709551615")
    }

    fn visit_u64<E: Error>(self, v: u64) -> Result<u64, E> {
        Ok(v)
    }

    fn visit_i64<E: Error>(self, v: i64) -> Result<u64, E> {
        u64::try_from(v).map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(v), &self))
    }

    fn visit_f64<E: Error>(self, v: f64) -> Result<u64, E> {
        // 2^64 itself is not a u64; every smaller whole f64 is.
        if v.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&v) {
            Ok(v as u64)
        } else {
            Err(E::invalid_value(serde::de::Unexpected::Float(v), &self))
        }
    }
}

pub fn required<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    d.deserialize_any(Whole)
}

struct Maybe;

impl<'de> Visitor<'de> for Maybe {
    type Value = Option<u64>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a whole number or null")
    }

    fn visit_none<E: Error>(self) -> Result<Option<u64>, E> {
        Ok(None)
    }

    fn visit_unit<E: Error>(self) -> Result<Option<u64>, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<u64>, D::Error> {
        required(d).map(Some)
    }
}

pub fn optional<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    d.deserialize_option(Maybe)
}

/// One whole number of a list.
struct Element(u64);

impl<'de> serde::Deserialize<'de> for Element {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        required(d).map(Self)
    }
}

/// An optional list of whole numbers (null or absent: none).
pub fn optional_list<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u64>>, D::Error> {
    let list: Option<Vec<Element>> = serde::Deserialize::deserialize(d)?;
    Ok(list.map(|l| l.into_iter().map(|Element(n)| n).collect()))
}
