//! Static evaluation of HCL expressions, and their canonical text.
//!
//! We evaluate what can be known without a plan: literals, collections, templates,
//! operators, conditionals, `for` expressions, the common pure functions, and
//! references to `var.*` (bound to defaults) and `local.*` (evaluated in turn).
//! Anything else (resource attributes, `path.*`, impure or unknown functions) makes
//! the result unknown (`None`), and callers stay conservative.

use std::collections::BTreeMap;

use hcl_edit::expr::{
    BinaryOperator, Expression, ForExpr, FuncCall, Object, ObjectKey, TraversalOperator,
    UnaryOperator,
};
use hcl_edit::template::{Element, Template};
use serde_json::Value;

/// A JSON number from an `f64`, integral values as integers.
pub use stackpack_schema::types::number;

/// The value of an expression that references nothing.
pub fn static_value(expr: &Expression) -> Option<Value> {
    Evaluator::new(&BTreeMap::new(), &BTreeMap::new()).eval(expr)
}

/// The expression's source text with comments and whitespace outside string literals
/// removed: equal for two expressions that differ only in formatting or comments.
pub fn canonical_text(expr: &Expression) -> String {
    canonical_source(&expr.to_string())
}

/// [`canonical_text`] of source text.
pub fn canonical_source(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' => {
                out.push(c);
                i += 1;
                while i < chars.len() {
                    out.push(chars[i]);
                    if chars[i] == '\\' && i + 1 < chars.len() {
                        out.push(chars[i + 1]);
                        i += 2;
                        continue;
                    }
                    i += 1;
                    if chars[i - 1] == '"' {
                        break;
                    }
                }
                continue;
            }
            '#' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '/' if chars.get(i + 1) == Some(&'/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                i += 2;
                while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                    i += 1;
                }
                i += 2;
                continue;
            }
            c if c.is_whitespace() => {
                // Keep one space between two word characters, so `a in b` stays apart.
                let prev = out.chars().last();
                let mut j = i;
                while j < chars.len() && chars[j].is_whitespace() {
                    j += 1;
                }
                let next = chars.get(j).copied();
                if let (Some(p), Some(n)) = (prev, next) {
                    if is_word(p) && is_word(n) {
                        out.push(' ');
                    }
                }
                i = j;
                continue;
            }
            _ => out.push(c),
        }
        i += 1;
    }
    // A trailing comma in a collection is formatting.
    out.replace(",]", "]").replace(",}", "}").replace(",)", ")")
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Evaluates expressions with `var.*` bound to values and `local.*` to expressions.
pub struct Evaluator<'a> {
    vars: &'a BTreeMap<String, Value>,
    locals: &'a BTreeMap<String, Expression>,
    scope: Vec<(String, Value)>,
    depth: usize,
    /// Set when evaluation met something only a plan knows (a resource attribute, a
    /// required input, an unsupported function), as opposed to an error in known
    /// values; `try` and `can` need the difference.
    unknown: bool,
}

impl<'a> Evaluator<'a> {
    pub fn new(
        vars: &'a BTreeMap<String, Value>,
        locals: &'a BTreeMap<String, Expression>,
    ) -> Self {
        Evaluator {
            vars,
            locals,
            scope: Vec::new(),
            depth: 0,
            unknown: false,
        }
    }

    /// Binds a bare name (`output` in `output.bucket`) to a value, as a `for`
    /// expression binds its variables.
    pub fn bind(&mut self, name: &str, value: Value) -> &mut Self {
        self.scope.push((name.to_string(), value));
        self
    }

    pub fn eval(&mut self, expr: &Expression) -> Option<Value> {
        if self.depth > 64 {
            return None;
        }
        self.depth += 1;
        let result = self.eval_inner(expr);
        self.depth -= 1;
        result
    }

    fn eval_inner(&mut self, expr: &Expression) -> Option<Value> {
        Some(match expr {
            Expression::Null(_) => Value::Null,
            Expression::Bool(b) => Value::Bool(*b.value()),
            Expression::Number(n) => number(n.value().as_f64()?),
            Expression::String(s) => Value::String(s.value().clone()),
            Expression::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|e| self.eval(e))
                    .collect::<Option<Vec<_>>>()?,
            ),
            Expression::Object(obj) => self.object(obj)?,
            Expression::StringTemplate(t) => Value::String(self.template(t)?),
            Expression::HeredocTemplate(h) => Value::String(self.template(&h.template)?),
            Expression::Parenthesis(p) => self.eval(p.inner())?,
            Expression::Variable(ident) => {
                let name = ident.as_str();
                match self.scope.iter().rev().find(|(n, _)| n == name) {
                    Some((_, v)) => v.clone(),
                    None => return self.unknowable(),
                }
            }
            Expression::Conditional(c) => match self.eval(&c.cond_expr)? {
                Value::Bool(true) => self.eval(&c.true_expr)?,
                Value::Bool(false) => self.eval(&c.false_expr)?,
                _ => return None,
            },
            Expression::UnaryOp(op) => {
                let v = self.eval(&op.expr)?;
                match op.operator.value() {
                    UnaryOperator::Not => Value::Bool(!v.as_bool()?),
                    UnaryOperator::Neg => number(-as_number(&v)?),
                }
            }
            Expression::BinaryOp(op) => self.binary(op)?,
            Expression::Traversal(t) => self.traversal(t)?,
            Expression::FuncCall(call) => self.func_call(call)?,
            Expression::ForExpr(f) => self.for_expr(f)?,
        })
    }

    fn object(&mut self, obj: &Object) -> Option<Value> {
        let mut map = serde_json::Map::new();
        for (key, value) in obj.iter() {
            let key = match key {
                ObjectKey::Ident(ident) => ident.as_str().to_string(),
                ObjectKey::Expression(e) => as_string(&self.eval(e)?)?,
            };
            map.insert(key, self.eval(value.expr())?);
        }
        Some(Value::Object(map))
    }

    /// A built-in function call; `try` and `can` see their arguments' failures.
    fn func_call(&mut self, call: &FuncCall) -> Option<Value> {
        if !call.name.namespace.is_empty() {
            // Provider-defined functions run only inside a plan.
            return self.unknowable();
        }
        let name = call.name.name.as_str();
        let args: Vec<&Expression> = call.args.iter().collect();
        match name {
            "try" => {
                for a in args {
                    match self.attempt(a) {
                        Attempt::Value(v) => return Some(v),
                        Attempt::Unknown => return self.unknowable(),
                        Attempt::Error => {}
                    }
                }
                return None;
            }
            "can" => {
                return match self.attempt(args.first()?) {
                    Attempt::Value(_) => Some(Value::Bool(true)),
                    Attempt::Error => Some(Value::Bool(false)),
                    Attempt::Unknown => self.unknowable(),
                }
            }
            _ => {}
        }
        if !FUNCTIONS.contains(&name) {
            return self.unknowable();
        }
        let values = args
            .iter()
            .map(|a| self.eval(a))
            .collect::<Option<Vec<_>>>()?;
        function(name, &values, call.args.expand_final())
    }

    /// `[for k, v in c : …]` or `{for k, v in c : k => …}`, with its `if` filter.
    fn for_expr(&mut self, f: &ForExpr) -> Option<Value> {
        let collection = self.eval(&f.intro.collection_expr)?;
        let pairs: Vec<(Value, Value)> = match collection {
            Value::Array(items) => items
                .into_iter()
                .enumerate()
                .map(|(i, v)| (Value::from(i), v))
                .collect(),
            Value::Object(map) => map
                .into_iter()
                .map(|(k, v)| (Value::String(k), v))
                .collect(),
            _ => return None,
        };
        let mut list = Vec::new();
        let mut map = serde_json::Map::new();
        for (k, v) in pairs {
            let mark = self.scope.len();
            if let Some(key_var) = &f.intro.key_var {
                self.scope.push((key_var.as_str().to_string(), k));
            }
            self.scope.push((f.intro.value_var.as_str().to_string(), v));
            let keep = match &f.cond {
                Some(cond) => self.eval(&cond.expr).and_then(|c| c.as_bool()),
                None => Some(true),
            };
            let item = match keep {
                Some(true) => match &f.key_expr {
                    Some(key_expr) => self
                        .eval(key_expr)
                        .and_then(|k| as_string(&k))
                        .zip(self.eval(&f.value_expr))
                        .map(|(k, v)| {
                            map.insert(k, v);
                        }),
                    None => self.eval(&f.value_expr).map(|v| list.push(v)),
                },
                Some(false) => Some(()),
                None => None,
            };
            self.scope.truncate(mark);
            item?;
        }
        Some(if f.key_expr.is_some() {
            Value::Object(map)
        } else {
            Value::Array(list)
        })
    }

    fn template(&mut self, template: &Template) -> Option<String> {
        let mut out = String::new();
        for element in template.iter() {
            match element {
                Element::Literal(s) => out.push_str(s.value()),
                Element::Interpolation(i) => out.push_str(&as_string(&self.eval(&i.expr)?)?),
                Element::Directive(_) => {
                    self.unknown = true;
                    return None;
                }
            }
        }
        Some(out)
    }

    fn unknowable(&mut self) -> Option<Value> {
        self.unknown = true;
        None
    }

    /// Evaluates `expr`, telling an error in known values from an unknown value.
    fn attempt(&mut self, expr: &Expression) -> Attempt {
        let before = std::mem::replace(&mut self.unknown, false);
        let result = self.eval(expr);
        let unknown = self.unknown;
        self.unknown = before;
        match result {
            Some(v) => Attempt::Value(v),
            None if unknown => Attempt::Unknown,
            None => Attempt::Error,
        }
    }

    fn traversal(&mut self, t: &hcl_edit::expr::Traversal) -> Option<Value> {
        let mut ops = t.operators.iter().map(|op| op.value());
        let mut value = match &t.expr {
            Expression::Variable(root) if root.as_str() == "var" || root.as_str() == "local" => {
                let Some(TraversalOperator::GetAttr(name)) = ops.next() else {
                    return None;
                };
                if root.as_str() == "var" {
                    match self.vars.get(name.as_str()) {
                        Some(v) => v.clone(),
                        None => return self.unknowable(),
                    }
                } else {
                    let Some(expr) = self.locals.get(name.as_str()) else {
                        return self.unknowable();
                    };
                    // Locals see no iteration variables of the caller.
                    let saved = std::mem::take(&mut self.scope);
                    let v = self.eval(expr);
                    self.scope = saved;
                    v?
                }
            }
            other => self.eval(other)?,
        };
        for op in ops {
            value = match op {
                TraversalOperator::GetAttr(name) => value.get(name.as_str())?.clone(),
                TraversalOperator::Index(e) => match (self.eval(e)?, &value) {
                    (Value::String(k), Value::Object(map)) => map.get(&k)?.clone(),
                    (k, Value::Array(items)) => items.get(as_number(&k)? as usize)?.clone(),
                    _ => return None,
                },
                TraversalOperator::LegacyIndex(i) => value.get(*i.value() as usize)?.clone(),
                _ => return self.unknowable(),
            };
        }
        Some(value)
    }

    fn binary(&mut self, op: &hcl_edit::expr::BinaryOp) -> Option<Value> {
        use BinaryOperator::*;
        let operator = *op.operator.value();
        // `&&` and `||` short-circuit when one side is known, as the engine's plan would
        // still see the known side decide.
        if matches!(operator, And | Or) {
            let l = self.eval(&op.lhs_expr).and_then(|v| v.as_bool());
            let r = self.eval(&op.rhs_expr).and_then(|v| v.as_bool());
            return match (operator, l, r) {
                (And, Some(false), _) | (And, _, Some(false)) => Some(Value::Bool(false)),
                (Or, Some(true), _) | (Or, _, Some(true)) => Some(Value::Bool(true)),
                (And, Some(a), Some(b)) => Some(Value::Bool(a && b)),
                (Or, Some(a), Some(b)) => Some(Value::Bool(a || b)),
                _ => None,
            };
        }
        let l = self.eval(&op.lhs_expr)?;
        let r = self.eval(&op.rhs_expr)?;
        Some(match operator {
            Eq => Value::Bool(
                stackpack_schema::types::normalise(&l) == stackpack_schema::types::normalise(&r),
            ),
            NotEq => Value::Bool(
                stackpack_schema::types::normalise(&l) != stackpack_schema::types::normalise(&r),
            ),
            Less => Value::Bool(as_number(&l)? < as_number(&r)?),
            LessEq => Value::Bool(as_number(&l)? <= as_number(&r)?),
            Greater => Value::Bool(as_number(&l)? > as_number(&r)?),
            GreaterEq => Value::Bool(as_number(&l)? >= as_number(&r)?),
            Plus => number(as_number(&l)? + as_number(&r)?),
            Minus => number(as_number(&l)? - as_number(&r)?),
            Mul => number(as_number(&l)? * as_number(&r)?),
            Div => number(as_number(&l)? / as_number(&r)?),
            Mod => number(as_number(&l)? % as_number(&r)?),
            And | Or => return None,
        })
    }
}

enum Attempt {
    Value(Value),
    Unknown,
    Error,
}

/// The functions [`function`] evaluates.
const FUNCTIONS: &[&str] = &[
    "length",
    "tolist",
    "tomap",
    "tostring",
    "sensitive",
    "nonsensitive",
    "toset",
    "distinct",
    "tonumber",
    "tobool",
    "lower",
    "upper",
    "trimspace",
    "concat",
    "merge",
    "flatten",
    "compact",
    "keys",
    "values",
    "contains",
    "lookup",
    "coalesce",
    "coalescelist",
    "join",
    "split",
    "min",
    "max",
    "abs",
    "one",
    "element",
    "range",
    "zipmap",
    "jsonencode",
    "regex",
    "regexall",
    "startswith",
    "endswith",
    "strcontains",
    "substr",
    "replace",
    "trim",
    "trimprefix",
    "trimsuffix",
    "alltrue",
    "anytrue",
    "sum",
    "floor",
    "ceil",
    "cidrhost",
    "cidrnetmask",
    "cidrsubnet",
];

/// A value as a template would print it.
pub fn as_string(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn as_number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn as_bool(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(*b),
        Value::String(s) if s == "true" || s == "false" => Some(s == "true"),
        _ => None,
    }
}

/// The pure built-in functions that decide counts and defaults in practice.
fn function(name: &str, args: &[Value], expand_final: bool) -> Option<Value> {
    let mut args = args.to_vec();
    if expand_final {
        if let Some(Value::Array(last)) = args.pop() {
            args.extend(last);
        } else {
            return None;
        }
    }
    let args = args.as_slice();
    conversion_function(name, args)
        .or_else(|| text_function(name, args))
        .or_else(|| pattern_function(name, args))
        .or_else(|| network_function(name, args))
        .or_else(|| collection_function(name, args))
        .or_else(|| numeric_function(name, args))
}

/// Type conversions, and the sensitivity markers that change nothing here. `None`
/// for another function, or for arguments it refuses.
fn conversion_function(name: &str, args: &[Value]) -> Option<Value> {
    Some(match (name, args) {
        ("tolist" | "tomap" | "tostring" | "sensitive" | "nonsensitive", [v]) => v.clone(),
        ("toset" | "distinct", [Value::Array(a)]) => {
            let mut out: Vec<Value> = Vec::new();
            for v in a {
                if !out.contains(v) {
                    out.push(v.clone());
                }
            }
            if name == "toset" {
                out.sort_by_key(|v| v.to_string());
            }
            Value::Array(out)
        }
        ("tonumber", [v]) => number(as_number(v)?),
        ("tobool", [v]) => Value::Bool(as_bool(v)?),
        ("jsonencode", [v]) => Value::String(serde_json::to_string(v).ok()?),

        _ => return None,
    })
}

/// String functions. `None` for another function, or for arguments it refuses.
fn text_function(name: &str, args: &[Value]) -> Option<Value> {
    Some(match (name, args) {
        ("lower", [Value::String(s)]) => Value::String(s.to_lowercase()),
        ("upper", [Value::String(s)]) => Value::String(s.to_uppercase()),
        ("trimspace", [Value::String(s)]) => Value::String(s.trim().to_string()),
        ("join", [Value::String(sep), Value::Array(a)]) => Value::String(
            a.iter()
                .map(as_string)
                .collect::<Option<Vec<_>>>()?
                .join(sep),
        ),
        ("startswith", [Value::String(s), Value::String(p)]) => {
            Value::Bool(s.starts_with(p.as_str()))
        }
        ("endswith", [Value::String(s), Value::String(p)]) => Value::Bool(s.ends_with(p.as_str())),
        ("strcontains", [Value::String(s), Value::String(p)]) => {
            Value::Bool(s.contains(p.as_str()))
        }
        ("trimprefix", [Value::String(s), Value::String(p)]) => {
            Value::String(s.strip_prefix(p.as_str()).unwrap_or(s).to_string())
        }
        ("trimsuffix", [Value::String(s), Value::String(p)]) => {
            Value::String(s.strip_suffix(p.as_str()).unwrap_or(s).to_string())
        }
        ("trim", [Value::String(s), Value::String(cut)]) => {
            Value::String(s.trim_matches(|c| cut.contains(c)).to_string())
        }
        ("substr", [Value::String(s), offset, length]) => {
            let chars: Vec<char> = s.chars().collect();
            let len = chars.len() as i64;
            let mut offset = as_number(offset)? as i64;
            if offset < 0 {
                offset += len;
            }
            if offset < 0 || offset > len {
                return None;
            }
            let length = as_number(length)? as i64;
            let end = if length < 0 {
                len
            } else {
                (offset + length).min(len)
            };
            Value::String(chars[offset as usize..end as usize].iter().collect())
        }
        ("alltrue" | "anytrue", [Value::Array(a)]) => {
            let bools = a.iter().map(as_bool).collect::<Option<Vec<_>>>()?;
            Value::Bool(if name == "alltrue" {
                bools.iter().all(|b| *b)
            } else {
                bools.iter().any(|b| *b)
            })
        }
        ("split", [Value::String(sep), Value::String(s)]) => Value::Array(
            s.split(sep.as_str())
                .map(|p| Value::String(p.to_string()))
                .collect(),
        ),
        _ => return None,
    })
}

/// `regex`, `regexall` and `replace`: RE2 syntax, as Terraform's, which the `regex`
/// crate follows. A pattern that does not compile, and `regex` finding no match, are
/// errors (so `can(regex(…))` is false), as in Terraform.
fn pattern_function(name: &str, args: &[Value]) -> Option<Value> {
    if !matches!(name, "regex" | "regexall" | "replace") {
        return None;
    }
    // Their parameters are strings: a number or bool converts, as in Terraform.
    let args: Vec<Value> = args
        .iter()
        .map(|a| as_string(a).map(Value::String))
        .collect::<Option<_>>()?;
    Some(match (name, args.as_slice()) {
        ("regex", [Value::String(pattern), Value::String(s)]) => {
            let re = regex::Regex::new(pattern).ok()?;
            match_value(&re, &re.captures(s)?)
        }
        ("regexall", [Value::String(pattern), Value::String(s)]) => {
            let re = regex::Regex::new(pattern).ok()?;
            Value::Array(re.captures_iter(s).map(|c| match_value(&re, &c)).collect())
        }
        ("replace", [Value::String(s), Value::String(search), Value::String(with)]) => match search
            .strip_prefix('/')
            .and_then(|p| p.strip_suffix('/'))
            .filter(|p| !p.is_empty())
        {
            Some(pattern) => {
                let re = regex::Regex::new(pattern).ok()?;
                Value::String(re.replace_all(s, with.as_str()).into_owned())
            }
            None => Value::String(s.replace(search.as_str(), with)),
        },
        _ => return None,
    })
}

/// What Terraform's `regex` returns for one match: the matched text without capture
/// groups, a list with unnamed groups, an object with named ones.
fn match_value(re: &regex::Regex, captures: &regex::Captures) -> Value {
    let text = |m: Option<regex::Match>| match m {
        Some(m) => Value::String(m.as_str().to_string()),
        None => Value::Null,
    };
    if re.captures_len() == 1 {
        return text(captures.get(0));
    }
    if re.capture_names().flatten().next().is_some() {
        return Value::Object(
            re.capture_names()
                .flatten()
                .map(|n| (n.to_string(), text(captures.name(n))))
                .collect(),
        );
    }
    Value::Array(
        (1..re.captures_len())
            .map(|i| text(captures.get(i)))
            .collect(),
    )
}

/// An address prefix in CIDR notation, as a number with its width and length.
fn parse_cidr(text: &str) -> Option<(u128, u32, u32)> {
    let (address, length) = text.split_once('/')?;
    let length: u32 = length.parse().ok()?;
    let (bits, width) = match address.parse::<std::net::IpAddr>().ok()? {
        std::net::IpAddr::V4(a) => (u128::from(u32::from(a)), 32),
        std::net::IpAddr::V6(a) => (u128::from(a), 128),
    };
    (length <= width).then_some((bits, width, length))
}

fn format_address(bits: u128, width: u32) -> String {
    if width == 32 {
        std::net::Ipv4Addr::from(bits as u32).to_string()
    } else {
        std::net::Ipv6Addr::from(bits).to_string()
    }
}

/// `cidrhost`, `cidrnetmask` and `cidrsubnet`, for IPv4 and IPv6.
fn network_function(name: &str, args: &[Value]) -> Option<Value> {
    let mask = |width: u32, length: u32| -> u128 {
        let all = if width == 128 {
            u128::MAX
        } else {
            (1u128 << width) - 1
        };
        if length == 0 {
            0
        } else {
            all & !((1u128 << (width - length)) - 1)
        }
    };
    Some(match (name, args) {
        ("cidrhost", [Value::String(prefix), host]) => {
            let (bits, width, length) = parse_cidr(prefix)?;
            let host = as_number(host)?;
            let room = width - length;
            let size = if room >= 128 {
                u128::MAX
            } else {
                1u128 << room
            };
            let index = if host < 0.0 {
                size.checked_sub((-host) as u128)?
            } else {
                host as u128
            };
            if room < 128 && index >= size {
                return None;
            }
            Value::String(format_address((bits & mask(width, length)) | index, width))
        }
        ("cidrnetmask", [Value::String(prefix)]) => {
            let (_, width, length) = parse_cidr(prefix)?;
            if width != 32 {
                return None;
            }
            Value::String(format_address(mask(32, length), 32))
        }
        ("cidrsubnet", [Value::String(prefix), newbits, netnum]) => {
            let (bits, width, length) = parse_cidr(prefix)?;
            let newbits = as_number(newbits)? as u32;
            let netnum = as_number(netnum)? as u128;
            let new_length = length.checked_add(newbits).filter(|l| *l <= width)?;
            if newbits < 128 && netnum >= (1u128 << newbits) {
                return None;
            }
            let base = bits & mask(width, length);
            let shifted = netnum.checked_shl(width - new_length)?;
            Value::String(format!(
                "{}/{new_length}",
                format_address(base | shifted, width)
            ))
        }
        _ => return None,
    })
}

/// Functions over lists, sets, maps and their elements. `None` for another
/// function, or for arguments it refuses.
fn collection_function(name: &str, args: &[Value]) -> Option<Value> {
    Some(match (name, args) {
        ("length", [v]) => Value::from(match v {
            Value::Array(a) => a.len(),
            Value::Object(m) => m.len(),
            Value::String(s) => s.chars().count(),
            _ => return None,
        }),
        ("concat", _) => {
            let mut out = Vec::new();
            for a in args {
                out.extend(a.as_array()?.iter().cloned());
            }
            Value::Array(out)
        }
        ("merge", _) => {
            let mut out = serde_json::Map::new();
            for a in args {
                match a {
                    Value::Object(m) => out.extend(m.clone()),
                    Value::Null => {}
                    _ => return None,
                }
            }
            Value::Object(out)
        }
        ("flatten", [Value::Array(a)]) => {
            fn flat(items: &[Value], out: &mut Vec<Value>) {
                for v in items {
                    match v {
                        Value::Array(inner) => flat(inner, out),
                        other => out.push(other.clone()),
                    }
                }
            }
            let mut out = Vec::new();
            flat(a, &mut out);
            Value::Array(out)
        }
        ("compact", [Value::Array(a)]) => Value::Array(
            a.iter()
                .filter(|v| !matches!(v, Value::Null) && v.as_str() != Some(""))
                .cloned()
                .collect(),
        ),
        ("keys", [Value::Object(m)]) => {
            Value::Array(m.keys().cloned().map(Value::String).collect())
        }
        ("values", [Value::Object(m)]) => Value::Array(m.values().cloned().collect()),
        ("contains", [Value::Array(a), v]) => Value::Bool(a.contains(v)),
        ("lookup", [Value::Object(m), Value::String(k)]) => m.get(k)?.clone(),
        ("lookup", [Value::Object(m), Value::String(k), d]) => m.get(k).unwrap_or(d).clone(),
        ("coalesce", _) => args
            .iter()
            .find(|v| !matches!(v, Value::Null) && v.as_str() != Some(""))?
            .clone(),
        ("coalescelist", _) => args
            .iter()
            .find(|v| v.as_array().is_some_and(|a| !a.is_empty()))?
            .clone(),
        ("one", [Value::Array(a)]) => match a.len() {
            0 => Value::Null,
            1 => a[0].clone(),
            _ => return None,
        },
        ("element", [Value::Array(a), i]) if !a.is_empty() => {
            a[as_number(i)? as usize % a.len()].clone()
        }
        ("range", [n]) => Value::Array((0..as_number(n)? as i64).map(Value::from).collect()),
        ("zipmap", [Value::Array(k), Value::Array(v)]) => Value::Object(
            k.iter()
                .zip(v)
                .map(|(k, v)| Some((as_string(k)?, v.clone())))
                .collect::<Option<serde_json::Map<_, _>>>()?,
        ),
        _ => return None,
    })
}

/// Numeric functions. `None` for another function, or for arguments it refuses.
fn numeric_function(name: &str, args: &[Value]) -> Option<Value> {
    Some(match (name, args) {
        ("min" | "max", _) if !args.is_empty() => {
            let nums = args.iter().map(as_number).collect::<Option<Vec<_>>>()?;
            let pick = if name == "min" {
                nums.iter().copied().fold(f64::INFINITY, f64::min)
            } else {
                nums.iter().copied().fold(f64::NEG_INFINITY, f64::max)
            };
            number(pick)
        }
        ("abs", [v]) => number(as_number(v)?.abs()),
        ("floor", [v]) => number(as_number(v)?.floor()),
        ("ceil", [v]) => number(as_number(v)?.ceil()),
        ("sum", [Value::Array(a)]) if !a.is_empty() => {
            number(a.iter().map(as_number).sum::<Option<f64>>()?)
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn eval(text: &str, vars: serde_json::Value) -> Option<Value> {
        let vars: BTreeMap<String, Value> = vars
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let locals = BTreeMap::new();
        Evaluator::new(&vars, &locals).eval(&hcl_edit::parser::parse_expr(text).unwrap())
    }

    #[test]
    fn evaluates_counts_and_defaults() {
        assert_eq!(
            eval("var.create ? 1 : 0", json!({"create": false})),
            Some(json!(0))
        );
        assert_eq!(
            eval("var.create && var.x ? 1 : 0", json!({"create": false})),
            Some(json!(0))
        );
        assert_eq!(
            eval("length(var.azs) > 0 ? 1 : 0", json!({"azs": ["a"]})),
            Some(json!(1))
        );
        assert_eq!(
            eval(
                "{ for k, v in var.m : k => v if v.on }",
                json!({"m": {"a": {"on": true}, "b": {"on": false}}})
            ),
            Some(json!({"a": {"on": true}}))
        );
        assert_eq!(
            eval("\"${var.p}-x\"", json!({"p": "a"})),
            Some(json!("a-x"))
        );
        assert_eq!(eval("aws_vpc.this.id", json!({})), None);
        assert_eq!(
            eval("toset([\"b\", \"a\", \"b\"])", json!({})),
            Some(json!(["a", "b"]))
        );
        assert_eq!(eval("3.0", json!({})), Some(json!(3)));
        // `try` and `can` tell an error in known values from an unknown value.
        assert_eq!(
            eval("try(var.cfg.enabled, false)", json!({"cfg": {}})),
            Some(json!(false))
        );
        assert_eq!(
            eval(
                "try(var.cfg.enabled, false)",
                json!({"cfg": {"enabled": true}})
            ),
            Some(json!(true))
        );
        assert_eq!(eval("try(aws_vpc.this[0].id, \"\")", json!({})), None);
        assert_eq!(
            eval("can(var.m[\"x\"])", json!({"m": {}})),
            Some(json!(false))
        );
        assert_eq!(
            eval("can(provider::aws::arn_parse(var.a))", json!({"a": "x"})),
            None
        );
        assert_eq!(eval("var.required ? 1 : 0", json!({})), None);
    }

    #[test]
    fn validation_functions_follow_terraform() {
        let rule = "can(regex(\"^[a-z][a-z0-9-]{1,30}$\", var.id))";
        assert_eq!(eval(rule, json!({"id": "globex"})), Some(json!(true)));
        assert_eq!(eval(rule, json!({"id": "Globex_Inc"})), Some(json!(false)));
        assert_eq!(
            eval("regex(\"(\\\\d+)-(\\\\w+)\", \"12-ab\")", json!({})),
            Some(json!(["12", "ab"]))
        );
        assert_eq!(
            eval("regex(\"(?P<n>\\\\d+)\", \"x42\")", json!({})),
            Some(json!({"n": "42"}))
        );
        assert_eq!(
            eval("length(regexall(\"[0-9]\", \"a1b2\"))", json!({})),
            Some(json!(2))
        );
        assert_eq!(
            eval(
                "can(regex(\"^(https?://[^[:space:]]+)?$\", \"\"))",
                json!({})
            ),
            Some(json!(true))
        );
        assert_eq!(
            eval("cidrhost(\"10.40.0.0/16\", 5)", json!({})),
            Some(json!("10.40.0.5"))
        );
        assert_eq!(
            eval("cidrsubnet(\"10.40.0.0/16\", 4, 2)", json!({})),
            Some(json!("10.40.32.0/20"))
        );
        assert_eq!(
            eval("cidrnetmask(\"10.0.0.0/12\")", json!({})),
            Some(json!("255.240.0.0"))
        );
        assert_eq!(
            eval("can(cidrhost(var.c, 0))", json!({"c": "10.0.0.0/33"})),
            Some(json!(false))
        );
        assert_eq!(
            eval(
                "startswith(var.r, \"us-\") && !endswith(var.r, \"-\")",
                json!({"r": "us-east-1"})
            ),
            Some(json!(true))
        );
        assert_eq!(
            eval(
                "alltrue([for z in var.z : contains([\"a\", \"b\"], z)])",
                json!({"z": ["a", "c"]})
            ),
            Some(json!(false))
        );
        assert_eq!(
            eval("replace(\"a-b-c\", \"/-+/\", \"_\")", json!({})),
            Some(json!("a_b_c"))
        );
        assert_eq!(
            eval("substr(\"hello\", 1, 3)", json!({})),
            Some(json!("ell"))
        );
        let (vars, locals) = (BTreeMap::new(), BTreeMap::new());
        let mut evaluator = Evaluator::new(&vars, &locals);
        let expr = hcl_edit::parser::parse_expr("startswith(output.bucket, \"globex\")").unwrap();
        assert_eq!(
            evaluator
                .bind("output", json!({"bucket": "globex-models"}))
                .eval(&expr),
            Some(json!(true))
        );
    }

    #[test]
    fn canonical_text_ignores_formatting_and_comments() {
        assert_eq!(
            canonical_source("length( var.x ) >= 2 # at least two\n  && true"),
            canonical_source("length(var.x)>=2&&true")
        );
        assert_eq!(
            canonical_source("[for x in var.a : x]"),
            "[for x in var.a:x]"
        );
        assert_eq!(canonical_source("\"a  b\""), "\"a  b\"");
        assert_eq!(canonical_source("[\n 1,\n 2,\n]"), "[1,2]");
    }
}
