public enum EnginePlaceholder {}
