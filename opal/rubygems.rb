# frozen_string_literal: true

# `require "rubygems"`: MRI has RubyGems loaded already, and so does an up_node bundle
# (opal/opal_fixes/rubygems.rb); this makes the require find it.
require 'opal_fixes/rubygems'
