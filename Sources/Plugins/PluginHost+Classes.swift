import CLilv

extension PluginHost {
    /// LV2's class of limiters (lv2core): a render normalizing loudness may raise the level into one.
    public static let limiterClass = "http://lv2plug.in/ns/lv2core#LimiterPlugin"

    /// Every class the plugin's data gives it (`a lv2:Plugin, lv2:LimiterPlugin`: its rdf:type values, lv2:Plugin
    /// among them), or an empty list when it is not installed. `PluginInfo.className` is the one label lilv picks;
    /// a plugin may declare several classes, in no order lilv keeps.
    public func classes(of uri: String) -> [String] {
        locked {
            guard let p = lilvPlugin(uri) else { return [] }
            let type = node("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
            defer { lilv_node_free(type) }
            let values = lilv_plugin_get_value(p, type)
            defer { lilv_nodes_free(values) }
            return Self.strings(values)
        }
    }
}
