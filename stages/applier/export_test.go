package applier

// Attribute is attribute, for the external tests.
var Attribute = attribute
