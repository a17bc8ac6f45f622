//! An instance's variables as its templates see them: each converted to a
//! template value when a template first reads it. Converting them all up
//! front took most of a τ² instance's rendering, whose variables carry the
//! tools' database (230 KB) that no template reads.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use minijinja::Value as TemplateValue;
use minijinja::value::{Enumerator, Object, ObjectRepr};
use serde_json::{Map, Value};

/// `vars` as a template context's map, converted lazily.
pub(crate) fn lazy(vars: &Arc<Map<String, Value>>) -> TemplateValue {
    TemplateValue::from_object(Vars {
        vars: Arc::clone(vars),
        converted: Mutex::default(),
    })
}

#[derive(Debug)]
struct Vars {
    vars: Arc<Map<String, Value>>,
    /// Each variable a template read, converted once.
    converted: Mutex<BTreeMap<String, TemplateValue>>,
}

impl Object for Vars {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &TemplateValue) -> Option<TemplateValue> {
        let name = key.as_str()?;
        let value = self.vars.get(name)?;
        let mut converted = self.converted.lock().unwrap_or_else(|e| e.into_inner());
        let value = converted
            .entry(name.to_owned())
            .or_insert_with(|| TemplateValue::from(minijinja::value::Serde(value)));
        Some(value.clone())
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(
            self.vars
                .keys()
                .map(|k| TemplateValue::from(k.as_str()))
                .collect(),
        )
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(self.vars.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every way a template reads its variables gives what the eager
    /// conversion gave.
    #[test]
    fn templates_read_lazy_variables_as_eager_ones() {
        let vars: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "name": "Анна",
            "n": 3,
            "items": [1, {"a": [true, null]}],
            "db": {"users": {"u1": {"zip": "12345"}}},
        }))
        .unwrap();
        let templates = [
            "{{ name }} {{ n + 1 }} {{ items[1].a }} {{ db.users.u1.zip }}",
            "{% for i in items %}{{ i }};{% endfor %}",
            "{{ missing is defined }} {{ db | tojson }}",
            "{{ items | length }} {{ db.users | list }}",
            "{% if name %}yes{% endif %}{{ debug is defined }}",
        ];
        let env = minijinja::Environment::new();
        let lazy_vars = lazy(&Arc::new(vars.clone()));
        for template in templates {
            let eager = env
                .render_str(
                    template,
                    minijinja::context! { index => 1, ..TemplateValue::from(minijinja::value::Serde(&vars)) },
                )
                .unwrap();
            let lazy = env
                .render_str(
                    template,
                    minijinja::context! { index => 1, ..lazy_vars.clone() },
                )
                .unwrap();
            assert_eq!(lazy, eager, "{template}");
        }
    }
}
