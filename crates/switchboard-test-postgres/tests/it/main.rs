//! Real PostgreSQL servers, as the tests of the PostgreSQL stores get them: a private cluster
//! that can be stopped and started again, and fresh databases on the shared server.

mod cluster;
mod database;
