public enum PresetsPlaceholder {}
