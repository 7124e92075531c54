# frozen_string_literal: true

# Opal's parser and compiler, built as a file of its own beside a bundle that evaluates Ruby
# in Strings (Up::Node::OpalBuilder.parser; opal/opal_fixes/string_eval.rb loads it on the
# first String eval). Code compiled at run time gets the same rewriting as the files
# compiled into the bundle (Up::Node::Rewriters), or an instance variable named @name
# would be another property in a template than in the app that set it.
require 'opal-parser'
require 'up/node/rewriters'

::Up::Node::Rewriters::AT_RUN_TIME.each { |rewriter| ::Opal::Rewriter.use(rewriter) }
