//! fio's `lib/num2str.c`, the "cheesy number->string conversion" behind every
//! `712k`, `64.0MiB` and `2783MiB/s` in the normal output.

/// `enum n2s_unit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum N2sUnit {
    None,
    PerSec,
    Byte,
    Bit,
    BytePerSec,
    BitPerSec,
}

impl N2sUnit {
    fn suffix(self) -> &'static str {
        match self {
            N2sUnit::None => "",
            N2sUnit::PerSec => "/s",
            N2sUnit::Byte => "B",
            N2sUnit::Bit => "bit",
            N2sUnit::BytePerSec => "B/s",
            N2sUnit::BitPerSec => "bit/s",
        }
    }
}

const SISTR: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
const IECSTR: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

/// `num2str(num, maxlen, base, pow2, units)`: divide by 1000/1024 until at most `maxlen`
/// digits remain; print the remainder as decimals when there is room for at least one
/// (`%.*f` of remainder/thousand, carrying into the integer part if it rounds to 1),
/// else round the integer half-up.
pub fn num2str(num: u64, maxlen: usize, base: u64, pow2: bool, units: N2sUnit) -> String {
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let prefix = if pow2 { &IECSTR } else { &SISTR };
    let mut num = num;
    let mut post_index = 0usize;
    let mut base = base;
    while base > 1 {
        base /= thousand;
        post_index += 1;
    }
    if matches!(units, N2sUnit::Bit | N2sUnit::BitPerSec) {
        num = num.wrapping_mul(8);
    }
    let mut modulo: Option<u64> = None;
    let mut carry = false;
    while post_index < SISTR.len() {
        if num.to_string().len() <= maxlen {
            break;
        }
        let m = num % thousand;
        num /= thousand;
        carry = m >= thousand / 2;
        modulo = Some(m);
        post_index += 1;
    }
    if post_index >= SISTR.len() {
        post_index = 0;
    }
    let done = |n: u64, pi: usize| format!("{}{}{}", n, prefix[pi], units.suffix());
    let Some(modulo) = modulo else {
        return done(num, post_index);
    };
    let ilen = num.to_string().len();
    if maxlen as i64 - ilen as i64 <= 1 {
        if carry {
            num += 1;
        }
        return done(num, post_index);
    }
    let decimals = maxlen - ilen - 1;
    let tmp = format!("{:.*}", decimals, modulo as f64 / thousand as f64);
    if tmp.starts_with('1') {
        num += 1;
    }
    format!(
        "{}.{}{}{}",
        num,
        &tmp[2..],
        prefix[post_index],
        units.suffix()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        assert_eq!(num2str(712000, 4, 1, false, N2sUnit::None), "712k");
        assert_eq!(num2str(19200, 4, 1, false, N2sUnit::None), "19.2k");
        assert_eq!(num2str(8653, 4, 1, false, N2sUnit::None), "8653");
        assert_eq!(num2str(4096, 4, 1, true, N2sUnit::Byte), "4096B");
        assert_eq!(num2str(65536, 4, 1, true, N2sUnit::Byte), "64.0KiB");
        assert_eq!(num2str(131072, 4, 1, true, N2sUnit::Byte), "128KiB");
        assert_eq!(num2str(67108864, 4, 1, true, N2sUnit::Byte), "64.0MiB");
        assert_eq!(num2str(67108864, 4, 1, false, N2sUnit::Byte), "67.1MB");
        assert_eq!(num2str(5693012, 6, 1, false, N2sUnit::None), "5693.0k");
        assert_eq!(num2str(5210112, 4, 1, true, N2sUnit::Byte), "5088KiB");
    }
}
