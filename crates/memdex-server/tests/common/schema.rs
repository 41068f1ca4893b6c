//! Whether a JSON answer matches its schema in the served OpenAPI document.

use serde_json::Value;

/// Whether `v` matches `schema` of the OpenAPI document `doc` (the JSON Schema keywords the
/// document uses: $ref, oneOf, allOf, type, enum, required, properties, items, minimum); the
/// first mismatch, named by its path.
pub fn conforms(doc: &Value, schema: &Value, v: &Value, at: &str) -> Result<(), String> {
    if let Some(r) = schema["$ref"].as_str() {
        let name = r.trim_start_matches("#/components/schemas/");
        return conforms(doc, &doc["components"]["schemas"][name], v, at);
    }
    if let Some(all) = schema["allOf"].as_array() {
        for s in all {
            conforms(doc, s, v, at)?;
        }
    }
    if let Some(any) = schema["oneOf"].as_array() {
        let ok: Vec<_> = any
            .iter()
            .filter(|s| conforms(doc, s, v, at).is_ok())
            .collect();
        if ok.len() != 1 {
            return Err(format!("{at}: {} of oneOf match {v}", ok.len()));
        }
    }
    if let Some(e) = schema["enum"].as_array() {
        if !e.contains(v) {
            return Err(format!("{at}: {v} not in {schema}"));
        }
    }
    let types: Vec<&str> = match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let kind_ok = |t: &str| match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        _ => true,
    };
    if !types.is_empty() && !types.iter().any(|t| kind_ok(t)) {
        return Err(format!("{at}: {v} is not {types:?}"));
    }
    if let Some(min) = schema["minimum"].as_f64() {
        if v.as_f64().is_some_and(|x| x < min) {
            return Err(format!("{at}: {v} < {min}"));
        }
    }
    if let Some(o) = v.as_object() {
        for r in schema["required"].as_array().into_iter().flatten() {
            let r = r.as_str().unwrap();
            if !o.contains_key(r) {
                return Err(format!("{at}: required {r} missing"));
            }
        }
        if let Some(props) = schema["properties"].as_object() {
            for (k, x) in o {
                if let Some(p) = props.get(k) {
                    conforms(doc, p, x, &format!("{at}.{k}"))?;
                }
            }
        }
    }
    if let (Some(a), Some(items)) = (v.as_array(), schema.get("items")) {
        for (i, x) in a.iter().enumerate() {
            conforms(doc, items, x, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}
