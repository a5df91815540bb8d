// Building the tree: where a table header or a `key = value` line puts its table or value (into the last table of
// an array of tables, as `[[rack]]` then `[[rack.plugins]]` asks), refusing a key defined twice or a value used as
// a table.
extension TOMLParser {
    static func ensureTable(_ root: inout TOMLTable, _ keys: [String], line: Int) throws(TOMLError) {
        guard let first = keys.first else { return }
        var child: TOMLTable
        switch root[first] {
        case nil: child = TOMLTable(line: line)
        case .table(let t): child = t
        case .array(let items, _):
            guard case .table(let last)? = items.last else {
                throw TOMLError(line: line, message: "'\(first)' is already a value, not a table")
            }
            var copy = last
            try ensureTable(&copy, Array(keys.dropFirst()), line: line)
            var newItems = items
            newItems[newItems.count - 1] = .table(copy)
            root.set(first, .array(newItems, line: line), line: root.keyLines[first] ?? line)
            return
        default: throw TOMLError(line: line, message: "'\(first)' is already a value, not a table")
        }
        try ensureTable(&child, Array(keys.dropFirst()), line: line)
        root.set(first, .table(child), line: root.keyLines[first] ?? line)
    }

    static func appendTable(_ root: inout TOMLTable, _ keys: [String], line: Int) throws(TOMLError) {
        guard let first = keys.first else { return }
        if keys.count > 1 {
            var child: TOMLTable
            switch root[first] {
            case nil: child = TOMLTable(line: line)
            case .table(let t): child = t
            case .array(var items, let l):
                // `[[rack.plugins]]` after `[[rack]]`: into the last table of the array.
                guard case .table(var last)? = items.last else {
                    throw TOMLError(line: line, message: "'\(first)' is already a value, not a table")
                }
                try appendTable(&last, Array(keys.dropFirst()), line: line)
                items[items.count - 1] = .table(last)
                root.set(first, .array(items, line: l), line: root.keyLines[first] ?? line)
                return
            default: throw TOMLError(line: line, message: "'\(first)' is already a value, not a table")
            }
            try appendTable(&child, Array(keys.dropFirst()), line: line)
            root.set(first, .table(child), line: root.keyLines[first] ?? line)
            return
        }
        switch root[first] {
        case nil: root.set(first, .array([.table(TOMLTable(line: line))], line: line), line: line)
        case .array(let items, let l) where items.allSatisfy({ if case .table = $0 { return true } else { return false } }):
            root.set(first, .array(items + [.table(TOMLTable(line: line))], line: l), line: root.keyLines[first] ?? line)
        default: throw TOMLError(line: line, message: "'\(first)' is already a value, not an array of tables")
        }
    }

    static func insert(_ root: inout TOMLTable, path: [String], inArray: Bool, keys: [String],
                       value: TOMLValue, line: Int) throws(TOMLError) {
        if let first = path.first {
            switch root[first] {
            case .table(var t):
                try insert(&t, path: Array(path.dropFirst()), inArray: inArray, keys: keys, value: value, line: line)
                root.set(first, .table(t), line: root.keyLines[first] ?? line)
            case .array(var items, let l):
                // The last table of an array of tables (`[[rack]]` then `[[rack.plugins]]` or `[rack.x]`).
                guard case .table(var last)? = items.last else {
                    throw TOMLError(line: line, message: "cannot add keys to '\(first)'")
                }
                try insert(&last, path: Array(path.dropFirst()), inArray: inArray, keys: keys, value: value, line: line)
                items[items.count - 1] = .table(last)
                root.set(first, .array(items, line: l), line: root.keyLines[first] ?? line)
            default:
                throw TOMLError(line: line, message: "'\(first)' is not a table")
            }
            return
        }
        guard let key = keys.first else { return }
        if keys.count > 1 {
            var child: TOMLTable
            switch root[key] {
            case nil: child = TOMLTable(line: line)
            case .table(let t): child = t
            default: throw TOMLError(line: line, message: "'\(key)' is already a value, not a table")
            }
            try insert(&child, path: [], inArray: false, keys: Array(keys.dropFirst()), value: value, line: line)
            root.set(key, .table(child), line: root.keyLines[key] ?? line)
            return
        }
        if root[key] != nil { throw TOMLError(line: line, message: "key '\(key)' is defined twice") }
        root.set(key, value, line: line)
    }
}
