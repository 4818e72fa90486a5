#![allow(dead_code, non_snake_case, uncommon_codepoints, mixed_script_confusables, confusable_idents)]
use std::collections::HashMap;
use std::hint::black_box;

pub struct Buf<const N: usize>([u8; N]);
pub struct Tri<const A: i32, const B: bool, const C: char>;
pub struct Neg<const X: i64>;
pub struct Small<const X: u8, const Y: i8, const Z: u16, const W: i128>;

impl<const N: usize> Buf<N> {
    #[inline(never)]
    pub fn len(&self) -> usize { black_box(N) }
}
impl<const A: i32, const B: bool, const C: char> Tri<A, B, C> {
    #[inline(never)]
    pub fn get(&self) -> (i32, bool, char) { black_box((A, B, C)) }
}
impl<const X: i64> Neg<X> {
    #[inline(never)]
    pub fn get(&self) -> i64 { black_box(X) }
}
impl<const X: u8, const Y: i8, const Z: u16, const W: i128> Small<X, Y, Z, W> {
    #[inline(never)]
    pub fn get(&self) -> i128 { black_box(X as i128 + Y as i128 + Z as i128 + W) }
}

#[inline(never)]
pub fn arr<const N: usize>(a: [u8; N]) -> usize { black_box(a.len()) }
#[inline(never)]
pub fn slice_of<T: Clone>(a: &[T]) -> Vec<T> { black_box(a.to_vec()) }

pub trait Shape { fn area(&self) -> f64; }
pub struct Sq(f64);
impl Shape for Sq { #[inline(never)] fn area(&self) -> f64 { black_box(self.0 * self.0) } }

#[inline(never)]
pub fn dynamic(s: &dyn Shape) -> f64 { s.area() }
#[inline(never)]
pub fn fnptr(f: fn(u32, &str) -> bool) -> bool { f(1, "x") }
#[inline(never)]
pub fn tuple(t: (u8, i16, (), &'static str)) -> u8 { black_box(t.0) }
#[inline(never)]
pub fn raw(p: *const u8, q: *mut i64) -> usize { black_box(p as usize + q as usize) }
#[inline(never)]
pub fn mref(x: &mut Vec<String>) { x.push(String::new()) }
#[inline(never)]
pub fn boxed(b: Box<dyn Fn(u32) -> u32 + Send>) -> u32 { b(3) }
#[inline(never)]
pub fn unsafe_fn(f: unsafe extern "C" fn(i32) -> i32) -> usize { f as usize }

mod inner {
    pub mod deeper {
        #[inline(never)]
        pub fn f(x: u64) -> u64 { std::hint::black_box(x * 3) }
    }
}

fn main() {
    let b = Buf::<4>([0; 4]);
    let b2 = Buf::<0>([]);
    let t = Tri::<1, true, 'a'>;
    let t2 = Tri::<-7, false, '\n'>;
    let t3 = Tri::<2147483647, false, '\''>;
    let t4 = Tri::<0, true, 'é'>;
    let t5 = Tri::<-2147483648, true, '\u{1F600}'>;
    let t6 = Tri::<5, false, '\\'>;
    let t7 = Tri::<6, false, '\u{7f}'>;
    let t8 = Tri::<8, false, '"'>;
    let n = Neg::<-1>;
    let n2 = Neg::<{ i64::MIN }>;
    let s = Small::<255, -128, 65535, { -170141183460469231731687303715884105728 }>;
    let s2 = Small::<0, 127, 1, 170141183460469231731687303715884105727>;
    println!("{}", b.len() + b2.len() + arr([1u8; 3]) + arr([0u8; 16]));
    println!("{:?}{:?}{:?}{:?}{:?}{:?}{:?}{:?}", t.get(), t2.get(), t3.get(), t4.get(), t5.get(), t6.get(), t7.get(), t8.get());
    println!("{} {} {} {}", n.get(), n2.get(), s.get(), s2.get());
    println!("{:?}", slice_of(&[1u32, 2]).len() + slice_of(&["a".to_string()]).len());
    println!("{}", dynamic(&Sq(2.0)));
    fn cb(a: u32, _s: &str) -> bool { a == 1 }
    println!("{}", fnptr(cb));
    println!("{}", tuple((1, 2, (), "s")));
    let mut v = 0u8; let mut w = 0i64;
    println!("{}", raw(&v as *const u8, &mut w as *mut i64)); v += 1; let _ = v;
    let mut vs = Vec::new(); mref(&mut vs);
    let k = 5; println!("{}", boxed(Box::new(move |x| x + k)));
    extern "C" fn cf(x: i32) -> i32 { x }
    println!("{}", unsafe_fn(cf));
    let mut m: HashMap<String, Vec<(u8, char)>> = HashMap::new();
    m.insert("a".into(), vec![(1, 'x')]);
    println!("{}", m.len());
    println!("{}", inner::deeper::f(2));
    let c = |x: i32| x + 1; println!("{}", c(1));
    let it: Vec<i32> = (0..10).map(|x| x * 2).filter(|x| x % 3 == 0).collect(); println!("{:?}", it);
}
pub struct Big<const N: usize>;
impl<const N: usize> Big<N> { #[inline(never)] pub fn n(&self) -> usize { black_box(N) } }
#[used] static KEEP: fn() -> usize = || Big::<18446744073709551615>.n() + Big::<4096>.n();

// Non-ASCII identifiers: punycode in the mangled name.
pub mod 日本 {
    #[inline(never)] pub fn grüße(x: u32) -> u32 { std::hint::black_box(x + 1) }
    #[inline(never)] pub fn ñ() -> u8 { std::hint::black_box(3) }
}
pub struct Ünïcödé<const C: char>;
impl<const C: char> Ünïcödé<C> { #[inline(never)] pub fn get(&self) -> char { black_box(C) } }
#[inline(never)] pub fn a_b_ü() -> u8 { black_box(1) }
#[inline(never)] pub fn 東京タワー() -> u8 { black_box(2) }
#[used] static KEEP_UNI: fn() -> u32 = || 日本::grüße(1) + 日本::ñ() as u32 + Ünïcödé::<'ö'>.get() as u32
    + a_b_ü() as u32 + 東京タワー() as u32 + Ünïcödé::<'東'>.get() as u32;
